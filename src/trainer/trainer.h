// PolicyTrainer: one RL / SFT / DPO train step on a batch of experiences, as verl's actor update
// with Trinity's defaults (trinity-rft.md §2.9, §3.0): old logprobs = rollout logprobs (bypass
// mode), logprobs of logits / rollout temperature, one mini-batch per step (ppo_epochs passes),
// micro-batches packed up to a token budget, loss = Σ_mb actor_loss(mb, normaliser of the whole
// mini-batch) so the gradient does not depend on the split, grad-norm clipping, AdamW at
// lr · schedule(optimizer step). The reference policy is a frozen copy of the initial weights (with
// LoRA: the actor with its adapters off); the critic (PPO/GAE) is a value-head model initialised from
// the actor (merged) with its own AdamW. With LoRA the optimizer holds the adapters only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithm/algorithm.h"
#include "buffer/experience.h"
#include "model/transformer.h"
#include "trainer/optimizer.h"

namespace trinity::dist {
class Comm;
}

namespace trinity::trainer {

struct TrainerOptions {
  AdamWConfig optim;              // actor optimizer (lr, betas, eps, weight_decay)
  LrSchedule schedule;            // factor(optimizer step - 1)
  double grad_clip = 1.0;         // <= 0: no clipping
  int64_t max_token_len_per_gpu = 0;  // > 0: micro-batches packed greedily up to this many tokens
  int64_t micro_batch_size = 0;   // rows per micro-batch when no token budget (<= 0: whole batch)
  double temperature = 1.0;       // rollout temperature: logprobs of logits / temperature
  int64_t max_response_tokens = 0;  // > 0: the normaliser's max_len (Dr. GRPO's constant L)
  int64_t ppo_epochs = 1;         // optimizer steps per train step over the same batch
  uint64_t seed = 42;             // advantage rng: Rng(seed, step) per step (no state to checkpoint)
  // Rows of a micro-batch with equal prompts (a task's repeat_times samples, a DPO pair) share one
  // forward/backward of the prompt (trainer/packed_batch.h); off: every row computes its own.
  bool share_prompts = true;
  // How the frozen reference copy (full fine-tuning with a reference) holds its layer weights: kBF16
  // only when the starting weights are bf16 values (a bf16 checkpoint), so the copy is exact.
  model::WeightStorage reference_storage = model::WeightStorage::kF32;
  // Critic (only when the algorithm uses one).
  AdamWConfig critic_optim{1e-5, 0.9, 0.999, 1e-8, 0.01};
  LrSchedule critic_schedule;
  double critic_grad_clip = 1.0;
  double cliprange_value = 0.5;
  float critic_head_std = 0.0f;   // score head init: 0 = zeros, else normal(0, std)
  // Rollout correction (verl's algorithm.rollout_correction, decoupled mode). bypass_mode (default):
  // the rollout logprobs are the PPO anchor (old logprobs). Off: the trainer recomputes the old
  // logprobs with the weights before the update, reports the rollout/trainer mismatch
  // (rollout_corr/*), and with rollout_is "token" / "sequence" multiplies the policy loss's token terms
  // by the truncated importance weight min(pi_old / pi_rollout, rollout_is_threshold) (TIS).
  struct RolloutCorrection {
    bool bypass_mode = true;
    std::string rollout_is;  // "" (none), "token", "sequence"
    double rollout_is_threshold = 2.0;
  } rollout_correction;
  // Data parallel (mpirun): every rank runs train_step on the same mini-batch; rank r computes the
  // micro-batches of its slice of the rows (rows [r·B/n, (r+1)·B/n)) and gradients, reference
  // logprobs, critic values and loss metrics are summed over ranks, so all ranks take the same
  // optimizer step. Null or one rank: everything runs here.
  dist::Comm* comm = nullptr;
};

class PolicyTrainer {
 public:
  // Takes ownership of the actor (its current weights are the reference policy when one is needed).
  PolicyTrainer(model::Transformer actor, const algo::AlgorithmSpec& spec, TrainerOptions opts = {});
  ~PolicyTrainer();

  // One train step on `batch` (the mini-batch); `step` is the 1-based train step. Returns Trinity-named
  // metrics. Experiences carry rollout logprobs (old_logprob), action masks and rewards; with
  // explorer-side advantages they must carry advantages too.
  std::map<std::string, double> train_step(std::vector<buffer::Experience> batch, int64_t step);

  // Deep copy of the current actor weights, adapters merged (for syncing to an inference engine).
  std::shared_ptr<const model::Transformer> snapshot() const;

  model::Transformer& actor() { return actor_; }
  const model::Transformer& actor() const { return actor_; }
  model::Transformer* critic() { return critic_.get(); }  // null unless the algorithm uses a critic
  const model::Transformer* critic() const { return critic_.get(); }
  const model::Transformer* reference() const { return ref_.get(); }  // null unless used
  model::Transformer* reference() { return ref_.get(); }
  AdamW& optimizer() { return opt_; }
  AdamW* critic_optimizer() { return critic_opt_.get(); }
  algo::Algorithm& algorithm() { return *alg_; }
  const TrainerOptions& options() const { return opts_; }
  int64_t last_step() const { return last_step_; }  // last train step run (0 = none)
  void set_last_step(int64_t s) { last_step_ = s; }

 private:
  model::Transformer actor_;
  std::unique_ptr<model::Transformer> ref_, critic_;
  std::unique_ptr<algo::Algorithm> alg_;
  TrainerOptions opts_;
  AdamW opt_;
  std::unique_ptr<AdamW> critic_opt_;
  int64_t last_step_ = 0;
};

// A value-head model with the actor's body weights and a fresh score head (zeros, or normal(0, std)).
model::Transformer make_critic(const model::Transformer& actor, float head_std = 0.0f, uint64_t seed = 0);
// Deep copy of a model's weights (same config and head), its layer weights held as `storage`.
model::Transformer clone(const model::Transformer& m, model::WeightStorage storage);

}  // namespace trinity::trainer
