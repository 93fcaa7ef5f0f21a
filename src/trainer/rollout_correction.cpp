// Rollout correction, decoupled mode (verl's algorithm.rollout_correction with bypass_mode false):
// the sampler (a bf16 engine, a stale policy) and the trainer may disagree on the logprobs of the same
// tokens. The old logprobs are recomputed with the trainer's weights before the update, the mismatch
// to the rollout logprobs is reported, and truncated importance sampling weighs the policy loss:
//   d_t = clamp(log pi_old - log pi_rollout, -20, 20)
//   token:    w_t = min(exp(d_t), C)             sequence: w_t = min(exp(clamp(Σ_t d_t, -20, 20)), C)
// w multiplies the policy loss's token terms (TokenBatch::pg_weight), not the KL or entropy terms.
// Metrics over the trained tokens: rollout_corr/kl = mean(log pi_rollout - log pi_old) (k1 estimate of
// KL(rollout || old)), rollout_corr/k3_kl, rollout_corr/ratio_{mean,max,min} of exp(d),
// rollout_corr/logprob_abs_diff_max; with IS: rollout_corr/is_weight_mean, rollout_corr/is_truncated_frac.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "trainer/train_stages.h"

namespace trinity::trainer {

void correct_rollout(model::Transformer& actor, StepBatch& s, const TrainerOptions& o, algo::Metrics& m) {
  const auto& rc = o.rollout_correction;
  auto& eb = s.eb;
  std::vector<float> old = policy_logprobs(actor, s, static_cast<float>(1.0 / o.temperature));
  if (!eb.has_old_logprob) {  // nothing to compare with: the recomputed logprobs are the anchor
    if (!rc.rollout_is.empty())
      throw ValueError("trainer",
                       "rollout_correction.rollout_is needs rollout logprobs, but some experiences have none");
    eb.old_logprob = std::move(old);
    return;
  }
  const int64_t B = eb.B, T = eb.T;
  double n = 0, k1 = 0, k3 = 0, rsum = 0, rmax = 0, rmin = 0, dmax = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const size_t i = static_cast<size_t>(b * T + t);
      if (eb.mask[i] == 0) continue;
      const double d = std::clamp(static_cast<double>(old[i]) - eb.old_logprob[i], -20.0, 20.0), r = std::exp(d);
      rmax = n == 0 ? r : std::max(rmax, r);
      rmin = n == 0 ? r : std::min(rmin, r);
      n += 1, k1 += -d, k3 += std::exp(-d) - 1 + d, rsum += r;
      dmax = std::max(dmax, std::abs(d));
    }
  const double nn = std::max(n, 1.0);
  m.set("rollout_corr/kl", k1 / nn);
  m.set("rollout_corr/k3_kl", k3 / nn);
  m.set("rollout_corr/ratio_mean", rsum / nn);
  m.set("rollout_corr/ratio_max", rmax);
  m.set("rollout_corr/ratio_min", rmin);
  m.set("rollout_corr/logprob_abs_diff_max", dmax);
  if (!rc.rollout_is.empty()) {
    const double C = rc.rollout_is_threshold;
    s.is_weight.assign(static_cast<size_t>(B * T), 0.0f);
    double wsum = 0, truncated = 0;
    for (int64_t b = 0; b < B; ++b) {
      double seq = 0;
      for (int64_t t = 0; t < T; ++t) {
        const size_t i = static_cast<size_t>(b * T + t);
        if (eb.mask[i] != 0) seq += static_cast<double>(old[i]) - eb.old_logprob[i];
      }
      const double seq_raw = std::exp(std::clamp(seq, -20.0, 20.0));
      for (int64_t t = 0; t < T; ++t) {
        const size_t i = static_cast<size_t>(b * T + t);
        if (eb.mask[i] == 0) continue;
        const double raw = rc.rollout_is == "sequence"
                               ? seq_raw
                               : std::exp(std::clamp(static_cast<double>(old[i]) - eb.old_logprob[i], -20.0, 20.0));
        const double w = std::min(raw, C);
        s.is_weight[i] = static_cast<float>(w);
        wsum += w, truncated += raw > C ? 1 : 0;
      }
    }
    m.set("rollout_corr/is_weight_mean", wsum / nn);
    m.set("rollout_corr/is_truncated_frac", truncated / nn);
  }
  eb.old_logprob = std::move(old);
}

}  // namespace trinity::trainer
