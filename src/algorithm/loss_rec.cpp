// REC policy loss (Trinity-RFT "rec": REINFORCE with optional clipping, weighting and regularisers;
// Trinity-RFT arXiv 2505.17826 and "group relative REINFORCE is secretly off-policy", arXiv 2509.24203):
//   r = sg(exp(logp − old)); I = in-range indicator by clip_mode; A' = A·weight;
//   L_t = −A'·logp·I  [− coef·logp (forward-kl)]  [+ coef·(logp − old)² (k2)]
// aggregated as a token mean (seq-mean-token-mean for clip_mode gspo-one-side). REC has no
// loss_agg_mode argument, like Trinity.
#include <algorithm>
#include <cmath>

#include "algorithm/policy_loss.h"

namespace trinity::algo {
namespace {

class RecLoss : public PolicyLoss {
 public:
  bool takes_rollout_is() const override { return true; }
  explicit RecLoss(const Args& a)
      : el_(a.f64("epsilon_low")), eh_(a.f64("epsilon_high")), elp_(a.f64("epsilon_low_prime")),
        ehp_(a.f64("epsilon_high_prime")),
        clip_(a.choice("clip_mode", {"none", "one-side", "two-side", "gspo-one-side", "ring"})),
        weight_(a.choice("weight", {"none", "importance_sampling", "gspo_importance_sampling", "advantage"})),
        reg_(a.choice("regularizer", {"none", "forward-kl", "k2"})), coef_(a.f64("regularizer_coef")),
        temp_(a.f64("temp")) {
    if (weight_ == "gspo_importance_sampling" && clip_ != "gspo-one-side")
      throw ConfigError("algorithm", strcat(a.where(), ": weight gspo_importance_sampling needs clip_mode "
                                                       "gspo-one-side, got \"", clip_, "\""));
    if (weight_ == "advantage" && temp_ <= 0)
      throw ConfigError("algorithm", strcat(a.where(), ": temp must be > 0, got ", temp_));
  }
  unsigned needs() const override {
    const bool old = clip_ != "none" || weight_ == "importance_sampling" ||
                     weight_ == "gspo_importance_sampling" || reg_ == "k2";
    return kNeedAdvantages | (old ? kNeedOldLogprob : 0u);
  }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn rec", needs());
    const bool gspo = clip_ == "gspo-one-side";
    std::vector<double> seq_ratio(static_cast<size_t>(mb.B), 1.0);
    if (gspo)
      for (int64_t b = 0; b < mb.B; ++b) {
        double s = 0, n = 0;
        for (int64_t t = 0; t < mb.T; ++t) {
          const size_t i = mb.at(b, t);
          s += mb.mask[i] * (static_cast<double>(mb.logprob[i]) - mb.old_logprob[i]), n += mb.mask[i];
        }
        seq_ratio[static_cast<size_t>(b)] = std::exp(s / (n + 1e-8));
      }
    auto ratio = [&](size_t i) {
      return mb.old_logprob.empty() ? 1.0 : std::exp(static_cast<double>(mb.logprob[i]) - mb.old_logprob[i]);
    };
    auto in_range = [&](int64_t b, size_t i) {
      const double a = mb.advantages[i];
      const double r = gspo ? seq_ratio[static_cast<size_t>(b)] : ratio(i);
      const bool two = r >= 1 - el_ && r <= 1 + eh_;
      if (clip_ == "none") return true;
      if (clip_ == "two-side") return two;
      if (clip_ == "ring") return two || (a >= 0 && r <= 1 - elp_) || (a <= 0 && r >= 1 + ehp_);
      return (r <= 1 + eh_ && a >= 0) || (r >= 1 - el_ && a <= 0);  // one-side, gspo-one-side
    };
    auto term = [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      double a = mb.advantages[i];
      if (weight_ == "importance_sampling") a *= ratio(i);
      if (weight_ == "gspo_importance_sampling") a *= seq_ratio[static_cast<size_t>(b)];
      if (weight_ == "advantage") a *= std::exp(a / temp_);
      const double lp = mb.logprob[i];
      TokenTerm out = in_range(b, i) ? TokenTerm{-a * lp, -a} : TokenTerm{0, 0};
      if (reg_ == "forward-kl") out.value -= coef_ * lp, out.dlogp -= coef_;
      if (reg_ == "k2") {
        const double d = lp - mb.old_logprob[i];
        out.value += coef_ * d * d, out.dlogp += 2 * coef_ * d;
      }
      return out;
    };
    const auto scale = agg_row_scale(gspo ? AggMode::kSeqMeanTokenMean : AggMode::kTokenMean, mb, norm);
    const double loss = accumulate_token_loss(mb, scale, dlogprob, term);
    m.add("pg_loss", loss);
    m.add("pg_clipfrac", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return in_range(b, mb.at(b, t)) ? 0.0 : 1.0;
          }));
    if (!mb.old_logprob.empty())
      m.add("ppo_kl", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
              return static_cast<double>(mb.old_logprob[mb.at(b, t)]) - mb.logprob[mb.at(b, t)];
            }));
    return loss;
  }

 private:
  double el_, eh_, elp_, ehp_;
  std::string clip_, weight_, reg_;
  double coef_, temp_;
};

}  // namespace

void add_rec_loss(std::vector<RegistryEntry<PolicyLoss>>& out) {
  out.push_back({"rec", "−A'·logp·I(in range) + regulariser; clip modes none/one-side/two-side/gspo-one-side/ring",
                 {{"epsilon_low", 0.2, "ε_low"},
                  {"epsilon_high", 0.2, "ε_high"},
                  {"epsilon_low_prime", 0.6, "ring: ε'_low"},
                  {"epsilon_high_prime", 2.0, "ring: ε'_high"},
                  {"clip_mode", "none", "none | one-side | two-side | gspo-one-side | ring"},
                  {"weight", "none", "none | importance_sampling | gspo_importance_sampling | advantage"},
                  {"regularizer", "none", "none | forward-kl | k2"},
                  {"regularizer_coef", 0.0, "regulariser coefficient"},
                  {"temp", 1.0, "temperature of the advantage weight exp(A/temp)"}},
                 [](const Args& a) { return std::make_unique<RecLoss>(a); }});
}

}  // namespace trinity::algo
