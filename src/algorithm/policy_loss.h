// Policy loss interface and registry (Trinity-RFT policy_loss_fn). A policy loss maps one
// micro-batch (batch.h) to its share of the mini-batch loss and ADDS d(loss)/d(logprob) into
// dlogprob [B, T] (callers zero it). Gradients follow PyTorch autograd of the reference formulas,
// including stop-gradients (sg) and the zero gradient of clamp outside its range. Metric names are
// Trinity's without the "actor/" prefix (the Algorithm adds it).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "algorithm/aggregation.h"
#include "algorithm/metrics.h"
#include "algorithm/registry.h"

namespace trinity::algo {

class PolicyLoss {
 public:
  virtual ~PolicyLoss() = default;
  virtual unsigned needs() const = 0;  // Need flags (batch.h)
  virtual double forward_backward(const TokenBatch& mb, const Normalizer& norm,
                                  std::span<float> dlogprob, Metrics& metrics) const = 0;
  // Losses whose token selection is nonlinear in the whole mini-batch (m2po) return true and build
  // the [B, T] keep mask from the mini-batch as one TokenBatch; minibatch_actor_loss then runs a
  // pre-pass over every micro-batch and hands each its rows as TokenBatch::keep.
  virtual bool needs_minibatch_mask() const { return false; }
  // Whether TokenBatch::pg_weight (rollout-correction importance weights) may scale this loss's token
  // terms: true for the losses on the ratio to the rollout policy whose terms all go through
  // accumulate_token_loss; false for SFT, DPO, mix / mix_chord and OPMD.
  virtual bool takes_rollout_is() const { return false; }
  virtual std::vector<uint8_t> minibatch_mask(const TokenBatch& whole, Metrics& metrics) const;
};

const Registry<PolicyLoss>& policy_loss_registry();  // kind "policy_loss_fn"

// --- shared pieces, also used by mix / mix_chord -----------------------------------------------

// PPO clipped surrogate for one token (Schulman et al. 2017, arXiv 1707.06347; dual clip: Ye et al.
// 2020, arXiv 1912.09729): r = exp(clamp(logp − old, ±20)); L = max(−A·r, −A·clip(r, 1−lo, 1+hi)),
// and for A < 0 L = min(L, −A·c).
struct PpoParams {
  double clip_low = 0.2, clip_high = 0.2, clip_ratio_c = 3.0;
  bool fallback_to_policy_gradient = false;
};
struct PpoToken {
  TokenTerm term;
  bool clipped = false;        // −A·clip(r) > −A·r
  bool clipped_lower = false;  // dual clip active (A < 0)
  double log_ratio = 0;        // clamped logp − old
};
PpoToken ppo_token(const PpoParams& p, double adv, double logp, double old);
PpoParams ppo_params(const Args& a);  // clip_range / clip_range_low / clip_range_high / clip_ratio_c

// The loss_agg_mode argument of the losses, and the mode under `key` (ConfigError naming it).
inline const ArgDef kAggArg{"loss_agg_mode", "token-mean", "loss aggregation (aggregation.h)"};
AggMode agg_of(const Args& a, const char* key = "loss_agg_mode");

// Registration hooks of the loss files (policy_loss.cpp assembles the registry).
void add_ratio_losses(std::vector<RegistryEntry<PolicyLoss>>& out);  // loss_ratio.cpp
void add_rec_loss(std::vector<RegistryEntry<PolicyLoss>>& out);      // loss_rec.cpp
void add_sft_losses(std::vector<RegistryEntry<PolicyLoss>>& out);    // loss_sft.cpp
void add_m2po_loss(std::vector<RegistryEntry<PolicyLoss>>& out);     // loss_m2po.cpp

}  // namespace trinity::algo
