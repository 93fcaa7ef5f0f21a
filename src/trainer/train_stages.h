// The stages of PolicyTrainer::train_step (trainer.h) as plain functions over one StepBatch, so each
// runs and is tested alone:
//   prepare_step -> [policy_logprobs of the reference] -> [critic_values] -> advantages ->
//   [update_critic] -> [correct_rollout] -> update_actor -> batch_stats
// StepBatch carries the mini-batch between them: the experiences, their padded arrays (ExperienceBatch),
// the micro-batch row ranges and the [B, T] reference logprobs / critic values when used.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "algorithm/algorithm.h"
#include "buffer/experience.h"
#include "model/transformer.h"
#include "pipeline/experience_batch.h"
#include "trainer/optimizer.h"
#include "trainer/trainer.h"

namespace trinity::trainer {

struct StepBatch {
  std::vector<buffer::Experience> exps;             // the mini-batch (after the advantage row selection)
  pipeline::ExperienceBatch eb;                     // rows of exps, padded [B, T] arrays
  std::vector<std::pair<int64_t, int64_t>> ranges;  // micro-batches [b0, b1) of every rank, in row order
  std::vector<int> owner;                           // rank that computes each range (all 0 on one rank)
  dist::Comm* comm = nullptr;                       // TrainerOptions::comm
  int rank = 0;
  bool mine(size_t k) const { return owner[k] == rank; }
  bool share_prompts = true;     // TrainerOptions::share_prompts: packed_batch computes equal prompts once
  std::vector<float> ref_lp;     // [B, T] reference logprobs; empty without a reference
  std::vector<float> values;     // [B, T] critic values at advantage time; empty without a critic
  std::vector<float> entropy;    // [B, T] actor entropy at advantage time (clipb, clipv)
  std::vector<float> is_weight;  // [B, T] rollout-correction weights on the policy loss; empty = none
};

// Builds the padded batch and its micro-batches (token budget o.max_token_len_per_gpu, else
// o.micro_batch_size rows), on n ranks those of each rank's slice of the rows. ValueError when the experiences do not
// fit the algorithm: DPO rows for a non-DPO algorithm or the reverse, or no rollout logprobs for a loss that needs
// them.
StepBatch prepare_step(std::vector<buffer::Experience> exps, const algo::Algorithm& alg, const TrainerOptions& o);

// [B, T] logprobs of each response token under `m` with logits / temperature (1 / inv_temp),
// one forward per micro-batch; the [B, T] entropies too when `entropy` is given.
std::vector<float> policy_logprobs(model::Transformer& m, const StepBatch& s, float inv_temp,
                                   std::vector<float>* entropy = nullptr);
// [B, T] values of the state before each response token (a value-head model).
std::vector<float> critic_values(model::Transformer& critic, const StepBatch& s);

// Trainer-side advantages (advantage_location() == kTrainer) from rewards, ref logprobs, values and
// the actor's entropy, with Rng(seed); rows the advantage function drops or duplicates rebuild the
// batch and its micro-batches, and an edited action mask (clipb, clipv) replaces the batch's. For explorer-side
// advantages: checks the experiences carry them and reports critic/score and critic/advantages. Adds the algorithm's
// metrics (and time/adv) to m.
void advantages(algo::Algorithm& alg, StepBatch& s, uint64_t seed, const TrainerOptions& o, algo::Metrics& m);

// The algorithm's TokenBatch of rows [b0, b1) without the current policy's arrays.
algo::TokenBatch token_rows(const StepBatch& s, int64_t b0, int64_t b1, int64_t train_step);

// Rollout correction with bypass_mode off (rollout_correction.cpp): recomputes the old logprobs with
// `actor` (the weights before the update), reports the mismatch to the rollout logprobs as
// rollout_corr/* metrics and, with rollout_is, fills s.is_weight; the recomputed logprobs become the
// batch's old logprobs. ValueError for rollout_is on experiences without rollout logprobs.
void correct_rollout(model::Transformer& actor, StepBatch& s, const TrainerOptions& o, algo::Metrics& m);

// o.ppo_epochs optimizer steps of the critic on the value loss (critic/* metrics of the last epoch).
algo::Metrics update_critic(model::Transformer& critic, AdamW& opt, const algo::Algorithm& alg, const StepBatch& s,
                            const TrainerOptions& o, int64_t step);
// o.ppo_epochs optimizer steps of the actor on the algorithm's loss through algo::minibatch_actor_loss
// (actor/* metrics averaged over epochs); a non-finite gradient norm skips that optimizer step.
algo::Metrics update_actor(model::Transformer& actor, AdamW& opt, const algo::Algorithm& alg, const StepBatch& s,
                           const TrainerOptions& o, int64_t step);

// Data parallel: sums `v` over ranks in place (a no-op on one rank).
void reduce_ranks(const StepBatch& s, std::vector<float>& v, const std::string& what);
// Data parallel: rank 0's metrics become the merge (Metrics::merge, in rank order) of every rank's.
void merge_ranks(algo::Metrics& m, dist::Comm* comm, const std::string& what);

// response_length/*, prompt_length/*, clip ratio, sample/model_version and perf/* token counts.
void batch_stats(algo::Metrics& m, const StepBatch& s, const algo::Algorithm& alg, const TrainerOptions& o);

}  // namespace trinity::trainer
