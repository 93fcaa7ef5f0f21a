// M2PO, Second-Moment Trust Policy Optimization (Zheng et al., arXiv 2510.01161; newer Trinity-RFT's
// m2po policy loss). Over the whole mini-batch (not per micro-batch: the selection is nonlinear),
// with lr = logp − old (old = the rollout behaviour policy):
//   trust tokens: m > 0 and ((A > 0 and lr > 0) or (A < 0 and lr < 0)), where PPO would clip;
//   if mean(lr²) over them exceeds m2_threshold, drop the largest lr² until the mean of the rest is
//   ≤ m2_threshold (sorted ascending, keep the longest prefix whose mean fits; ties stable).
// Loss: token-mean over ALL action tokens of keep·(−A·ρ), ρ = exp(lr clamped to ±log_ratio_clip)
// with a straight-through gradient (d/dlogp = −A·ρ even where the clamp is active).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "algorithm/policy_loss.h"

namespace trinity::algo {
namespace {

class M2poLoss : public PolicyLoss {
 public:
  bool takes_rollout_is() const override { return true; }
  explicit M2poLoss(const Args& a) : thr_(a.f64("m2_threshold")), clip_(a.f64("log_ratio_clip")) {
    if (!std::isfinite(thr_) || thr_ < 0)
      throw ConfigError("algorithm", strcat(a.where(), ": m2_threshold must be finite and >= 0, got ", thr_));
    if (!std::isfinite(clip_) || clip_ <= 0)
      throw ConfigError("algorithm", strcat(a.where(), ": log_ratio_clip must be finite and > 0, got ", clip_));
    const std::string agg = a.str("loss_agg_mode");
    if (agg != "token-mean")
      throw ConfigError("algorithm", strcat(a.where(),
                                            ": loss_agg_mode must be \"token-mean\" (M2PO normalises by "
                                            "every action token), got \"",
                                            agg, "\""));
  }
  unsigned needs() const override { return kNeedOldLogprob | kNeedAdvantages; }
  bool needs_minibatch_mask() const override { return true; }

  std::vector<uint8_t> minibatch_mask(const TokenBatch& w, Metrics& m) const override {
    w.validate("policy_loss_fn m2po", kNeedOldLogprob | kNeedAdvantages);
    const size_t n = static_cast<size_t>(w.B * w.T);
    std::vector<uint8_t> keep(n, 1);
    std::vector<size_t> trust;
    std::vector<double> m2(n, 0.0);
    double valid = 0;
    for (size_t i = 0; i < n; ++i) {
      if (w.mask[i] == 0) continue;
      valid += 1;
      const double lr = static_cast<double>(w.logprob[i]) - w.old_logprob[i], a = w.advantages[i];
      if (!std::isfinite(lr))
        throw ValueError("algorithm", strcat("policy_loss_fn m2po: non-finite log ratio at token ", i, " (logprob ",
                                             w.logprob[i], ", rollout logprob ", w.old_logprob[i], ")"));
      m2[i] = lr * lr;
      if ((a > 0 && lr > 0) || (a < 0 && lr < 0)) trust.push_back(i);
    }
    double before = 0;
    for (size_t i : trust) before += m2[i];
    before = trust.empty() ? 0.0 : before / static_cast<double>(trust.size());
    size_t kept = trust.size();
    double after_sum = before * static_cast<double>(trust.size());
    if (!trust.empty() && before > thr_) {
      std::vector<size_t> order = trust;
      std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return m2[x] < m2[y]; });
      double sum = 0;
      kept = 0;
      for (size_t j = 0; j < order.size(); ++j) {
        if ((sum + m2[order[j]]) / static_cast<double>(j + 1) > thr_) break;
        sum += m2[order[j]], kept = j + 1;
      }
      for (size_t j = kept; j < order.size(); ++j) keep[order[j]] = 0;
      after_sum = sum;
    }
    m.set("m2po/m2_before", before);
    m.set("m2po/m2_after", kept ? after_sum / static_cast<double>(kept) : 0.0);
    m.set("m2po/masked_fraction", safe_div(static_cast<double>(trust.size() - kept), valid));
    m.set("m2po/trust_region_fraction", safe_div(static_cast<double>(trust.size()), valid));
    return keep;
  }

  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    if (mb.keep.empty())
      throw ValueError("algorithm",
                       "policy_loss_fn m2po: needs the mini-batch token mask; run the loss through "
                       "algo::minibatch_actor_loss, which computes it over the whole mini-batch");
    mb.validate("policy_loss_fn m2po", needs());
    const auto scale = agg_row_scale(AggMode::kTokenMean, mb, norm);
    auto lrc = [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      return std::clamp(static_cast<double>(mb.logprob[i]) - mb.old_logprob[i], -clip_, clip_);
    };
    const double loss = accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      if (!mb.keep[i]) return TokenTerm{};
      const double g = -static_cast<double>(mb.advantages[i]) * std::exp(lrc(b, t));
      return TokenTerm{g, g};
    });
    m.add("pg_loss", loss);
    m.add("ppo_kl", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) { return -lrc(b, t); }));
    m.add("ratio/mean",
          token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) { return std::exp(lrc(b, t)); }));
    return loss;
  }

 private:
  double thr_, clip_;
};

}  // namespace

void add_m2po_loss(std::vector<RegistryEntry<PolicyLoss>>& out) {
  out.push_back({"m2po",
                 "token-mean of keep·(−A·exp(lr)); keep drops the largest lr² trust-region tokens of the mini-batch "
                 "until mean lr² ≤ m2_threshold (M2PO, arXiv 2510.01161)",
                 {{"m2_threshold", 0.04, "bound on the mean squared log ratio of the trust-region tokens"},
                  {"loss_agg_mode", "token-mean", "must be token-mean"},
                  {"log_ratio_clip", 20.0, "forward clamp of the log ratio (straight-through gradient)"}},
                 [](const Args& a) { return std::make_unique<M2poLoss>(a); }});
}

}  // namespace trinity::algo
