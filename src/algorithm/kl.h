// KL functions (Trinity-RFT kl_fn: none, k1, k2, k3, low_var_kl, abs, corrected_k3), used two ways:
//  - as a loss term   L_kl = kl_coef · Agg(kl(logp, ref[, old]))  with d/dlogp;
//  - as a reward penalty  token_rewards -= kl_coef · kl(old, ref) · m  (no gradient), followed by the
//    adaptive controller  e = clip(kl/target − 1, −0.2, 0.2); kl_coef ← kl_coef·(1 + e·B/horizon).
// Estimators (Schulman, "Approximating KL divergence", 2020): with x = ref − logp:
//   k1 = −x   k2 = x²/2   k3 = eˣ − x − 1   low_var_kl = clamp(k3(clamp(x,±20)), ±10)   abs = |x|
//   corrected_k3 = clamp(exp(logp − old), 0, 2) · k3   (k3 when no old logprob is available)
#pragma once

#include <memory>
#include <span>
#include <string>

#include "algorithm/aggregation.h"
#include "algorithm/metrics.h"
#include "algorithm/registry.h"

namespace trinity::algo {

enum class KlKind { kNone, kK1, kK2, kK3, kLowVarKl, kAbs, kCorrectedK3 };

class KlFn {
 public:
  KlFn(KlKind kind, const Args& args);  // args: adaptive, kl_coef, target_kl, horizon

  KlKind kind() const { return kind_; }
  bool is_none() const { return kind_ == KlKind::kNone; }
  double coef() const { return coef_; }
  void set_coef(double c) { coef_ = c; }

  // Per-token estimate and d/dlogp; `old` is used by corrected_k3 only when has_old.
  TokenTerm token(double logp, double ref, double old, bool has_old) const;

  // Loss term kl_coef·Agg(kl) for one micro-batch (needs ref_logprob; corrected_k3 also uses
  // old_logprob when given). Adds into dlogprob [B, T]. Metrics: kl_loss (= Agg(kl), unscaled, as
  // Trinity logs it) and kl_coef. `none` returns 0 and logs nothing.
  double loss(const TokenBatch& mb, const Normalizer& norm, AggMode mode, std::span<float> dlogprob,
              Metrics& metrics) const;

  // Reward penalty over a whole batch: token_rewards [B, T] -= kl_coef·kl(old, ref)·mask.
  // Metrics kl (mean over rows with tokens of the per-row masked mean KL) and kl_coef (the
  // coefficient used); then updates the coefficient when adaptive (batch size = B).
  void apply_penalty(std::span<float> token_rewards, std::span<const float> old_logprob,
                     std::span<const float> ref_logprob, std::span<const float> mask, int64_t B,
                     int64_t T, Metrics& metrics);

  // Adaptive controller step (no-op unless adaptive).
  void update(double current_kl, int64_t batch_size);

 private:
  KlKind kind_;
  double coef_;
  bool adaptive_;
  double target_ = 0, horizon_ = 0;
};

const Registry<KlFn>& kl_registry();  // kind "kl_fn"

}  // namespace trinity::algo
