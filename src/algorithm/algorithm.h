// Algorithm: an algorithm_type preset resolved with the user's overrides into concrete components
// (advantage fn, policy loss, KL penalty, KL loss, entropy bonus, sample strategy, aggregation) and
// the two batch operations the trainer calls:
//   1. compute_advantages(batch)   rewards -> advantages (KL reward penalty first, when configured)
//   2. actor_loss(micro-batch, mini-batch normaliser) ->
//        L = PolicyLoss − entropy_coef·Agg(H) + kl_coef·Agg(KL(logp, ref))
//      with dL/dlogprob and dL/dentropy [B, T] (zero where the mask is 0). Summing actor_loss over
//      the micro-batches of a mini-batch gives the mini-batch loss and gradient (batch.h).
// Metric names are Trinity's: actor/* for the loss, experience_pipeline/* for explorer-side
// advantages, critic/* for scores, advantages, returns and the KL penalty.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithm/advantage.h"
#include "algorithm/entropy.h"
#include "algorithm/kl.h"
#include "algorithm/policy_loss.h"
#include "algorithm/preset.h"
#include "algorithm/sample_strategy.h"

namespace trinity::algo {

struct LossOutput {
  double loss = 0;
  std::vector<float> dlogprob;  // [B, T]
  std::vector<float> dentropy;  // [B, T]
  Metrics metrics;
};

class Algorithm {
 public:
  // Resolves the spec against its preset and the registries. ConfigError on unknown names/args.
  explicit Algorithm(const AlgorithmSpec& spec);

  const std::string& type() const { return preset_->name; }
  const Preset& preset() const { return *preset_; }
  int64_t repeat_times() const { return repeat_times_; }
  bool use_reference() const;  // some component reads ref logprobs (KL loss/penalty, dpo)
  bool use_critic() const;     // the advantage fn reads values (ppo GAE)
  AdvLocation advantage_location() const { return location_; }
  Schema schema() const { return preset_->schema; }
  AggMode loss_agg_mode() const { return agg_; }
  const std::string& advantage_fn_name() const { return adv_name_; }
  const std::string& policy_loss_fn_name() const { return pl_name_; }
  const AdvantageFn* advantage_fn() const { return adv_.get(); }  // null when none (sft, dpo, raft)
  const PolicyLoss& policy_loss() const { return *pl_; }
  const KlFn& kl_penalty() const { return *kl_penalty_; }
  KlFn& kl_penalty() { return *kl_penalty_; }  // its adaptive coefficient evolves
  const KlFn& kl_loss() const { return *kl_loss_; }
  KlFn& kl_loss() { return *kl_loss_; }
  const EntropyFn& entropy() const { return *entropy_; }
  const SampleStrategy& sample_strategy() const { return *sample_; }
  // Needs flags the actor loss reads from TokenBatch.
  unsigned loss_needs() const;

  // Whole batch: advantages (zeros when the algorithm has none), applying the KL reward penalty
  // first when kl_penalty_fn is not none. Metrics include critic/score, critic/advantages and
  // critic/returns stats over kept rows.
  AdvOutput compute_advantages(const AdvInput& in, Rng& rng);

  // One micro-batch of the mini-batch whose normaliser is `norm`.
  LossOutput actor_loss(const TokenBatch& mb, const Normalizer& norm) const;

  // Human-readable summary of the resolved components and their args.
  std::string describe() const;

 private:
  const Preset* preset_;
  int64_t repeat_times_;
  AdvLocation location_;
  AggMode agg_;
  std::string adv_name_, pl_name_, klp_name_, kll_name_, ent_name_, ss_name_;
  std::unique_ptr<AdvantageFn> adv_;
  std::unique_ptr<PolicyLoss> pl_;
  std::unique_ptr<KlFn> kl_penalty_, kl_loss_;
  std::unique_ptr<EntropyFn> entropy_;
  std::unique_ptr<SampleStrategy> sample_;
  std::vector<std::pair<std::string, Args>> resolved_args_;  // for describe()
};

}  // namespace trinity::algo
