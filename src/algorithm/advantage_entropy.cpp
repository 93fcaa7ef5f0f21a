// Entropy-dynamics token clipping (Clip_B / Clip_V, "On the Entropy Dynamics in Reinforcement
// Fine-Tuning of LLMs", arXiv 2602.03392), trainer-side. Both start from grpo_verl advantages (ε) and
// then drop tokens from the action mask (AdvOutput::mask); positive-advantage tokens are always kept.
// Per token, with p = exp(old logprob), H the entropy and m the action mask:
//   S = p·(H + logp);  masked mean/std below are global over the batch, population std, n = max(Σm, 1).
//   clipb  z = S − mean(S); tokens with A < 0 and z < −μ·std(S) are dropped.
//   clipv  x = N − S with N = H·Σp² + Σp²·log p (vocabulary sums); tokens with A ≤ 0 and
//          x > μ·std(x) are dropped; if that is more than max_frac of the action tokens and the
//          A < 0 candidates exceed k = max(int(max_frac·Σm), 1), only the k largest-x A < 0 tokens are
//          dropped (ties: lower flat index first) while A = 0 candidates stay dropped.
// A std below 1e-12 keeps every token. [obs] Trinity's clipv drops zero-advantage tokens too (its
// doc says "negative"); kept as written, since it changes the token-mean denominator.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "algorithm/advantage.h"

namespace trinity::algo {
namespace {

using namespace adv_detail;

struct MaskedStats {
  double mean = 0, var = 0, n = 0;
};

MaskedStats masked_stats(const AdvInput& in, const std::vector<double>& x) {
  MaskedStats s;
  for (size_t i = 0; i < x.size(); ++i) s.n += in.mask[i];
  const double n = std::max(s.n, 1.0);
  for (size_t i = 0; i < x.size(); ++i) s.mean += x[i] * in.mask[i];
  s.mean /= n;
  for (size_t i = 0; i < x.size(); ++i) s.var += (x[i] - s.mean) * (x[i] - s.mean) * in.mask[i];
  s.var /= n;
  return s;
}

// S = p·(H + logp) per token.
std::vector<double> entropy_signal(const AdvInput& in) {
  std::vector<double> s(static_cast<size_t>(in.B * in.T));
  for (size_t i = 0; i < s.size(); ++i) {
    const double lp = in.old_logprob[i];
    s[i] = std::exp(lp) * (in.entropy[i] + lp);
  }
  return s;
}

// frac_clipped{,_pos,_neg}: the share of action tokens (of positive / negative advantage) dropped.
void clip_metrics(const AdvInput& in, const AdvOutput& out, Metrics& m) {
  double tot = 0, kept = 0, pos = 0, kept_pos = 0, neg = 0, kept_neg = 0;
  for (size_t i = 0; i < out.mask.size(); ++i) {
    const double a = out.advantages[i];
    tot += in.mask[i], kept += out.mask[i];
    if (a > 0) pos += in.mask[i], kept_pos += out.mask[i];
    if (a < 0) neg += in.mask[i], kept_neg += out.mask[i];
  }
  m.set("frac_clipped", 1 - kept / std::max(tot, 1.0));
  m.set("frac_clipped_pos", 1 - kept_pos / std::max(pos, 1.0));
  m.set("frac_clipped_neg", 1 - kept_neg / std::max(neg, 1.0));
}

class ClipAdv : public AdvantageFn {
 public:
  ClipAdv(bool clipv, const Args& a) : clipv_(clipv), eps_(a.f64("epsilon")), mu_(a.f64("mu")) {
    if (!(eps_ >= 0)) throw ConfigError("algorithm", strcat(a.where(), ": epsilon must be >= 0, got ", eps_));
    if (!(mu_ >= 0) || !std::isfinite(mu_))
      throw ConfigError("algorithm", strcat(a.where(), ": mu must be a finite number >= 0, got ", mu_));
    if (clipv) {
      max_frac_ = a.f64("max_frac");
      if (!(max_frac_ >= 0 && max_frac_ <= 1))
        throw ConfigError("algorithm", strcat(a.where(), ": max_frac must be in [0, 1], got ", max_frac_));
    }
  }
  unsigned needs() const override { return kAdvNeedOldLogprob | kAdvNeedEntropy | (clipv_ ? kAdvNeedNec : 0u); }
  bool trainer_side() const override { return true; }

  AdvOutput compute(const AdvInput& in, Rng&) const override {
    in.validate(clipv_ ? "advantage_fn clipv" : "advantage_fn clipb", needs());
    AdvOutput out = make_output(in);
    grpo_verl(in, eps_, out);
    finish_rows(out);
    out.mask.assign(in.mask.begin(), in.mask.end());
    auto x = entropy_signal(in);
    if (clipv_)
      for (size_t i = 0; i < x.size(); ++i) x[i] = in.nec[i] - x[i];
    const MaskedStats st = masked_stats(in, x);
    const double sd = std::sqrt(st.var);
    if (clipv_) {
      out.metrics.set("stdD", sd);
      if (sd >= 1e-12) clip_v(in, x, sd, out);
    } else {
      out.metrics.set("ES", st.mean);
      out.metrics.set("varS", st.var);
      if (sd >= 1e-12)
        for (size_t i = 0; i < x.size(); ++i)
          if (out.advantages[i] < 0 && x[i] - st.mean < -mu_ * sd) out.mask[i] = 0;
    }
    clip_metrics(in, out, out.metrics);
    return out;
  }

 private:
  void clip_v(const AdvInput& in, const std::vector<double>& x, double sd, AdvOutput& out) const {
    const size_t n = x.size();
    const double limit = mu_ * sd;
    double total = 0, clipped = 0;
    std::vector<size_t> neg;  // A < 0 action tokens over the limit
    for (size_t i = 0; i < n; ++i) {
      total += in.mask[i];
      const bool over = x[i] > limit, pos = out.advantages[i] > 0;
      if (in.mask[i] > 0 && !pos && over) clipped += 1;
      if (in.mask[i] > 0 && out.advantages[i] < 0 && over) neg.push_back(i);
    }
    total = std::max(total, 1.0);
    auto drop_all = [&] {
      for (size_t i = 0; i < n; ++i)
        if (out.advantages[i] <= 0 && x[i] > limit) out.mask[i] = 0;
    };
    if (clipped / total <= max_frac_) return drop_all();
    const size_t k = std::max<size_t>(static_cast<size_t>(max_frac_ * total), 1);
    if (neg.size() <= k) return drop_all();
    // Over the budget: zero-advantage tokens over the limit still go; of the negative ones only the
    // k with the largest x.
    for (size_t i = 0; i < n; ++i)
      if (out.advantages[i] == 0 && x[i] > limit) out.mask[i] = 0;
    std::stable_sort(neg.begin(), neg.end(), [&](size_t a, size_t b) { return x[a] > x[b]; });
    for (size_t j = 0; j < k; ++j) out.mask[neg[j]] = 0;
  }

  bool clipv_;
  double eps_, mu_, max_frac_ = 1e-4;
};

}  // namespace

void add_entropy_advantages(std::vector<RegistryEntry<AdvantageFn>>& out) {
  out.push_back({"clipb",
                 "grpo_verl + drop A<0 tokens with p(H+logp) − mean < −μ·std (Clip_B, arXiv 2602.03392)",
                 {{"epsilon", 1e-6, "ε of the GRPO advantage"}, {"mu", 2.5, "μ: clip threshold in stds"}},
                 [](const Args& a) { return std::make_unique<ClipAdv>(false, a); }});
  out.push_back({"clipv",
                 "grpo_verl + drop A≤0 tokens with N − p(H+logp) > μ·std, at most max_frac (Clip_V, arXiv 2602.03392)",
                 {{"epsilon", 1e-6, "ε of the GRPO advantage"},
                  {"mu", 8.5, "μ: clip threshold in stds"},
                  {"max_frac", 1e-4, "cap on the share of dropped action tokens"}},
                 [](const Args& a) { return std::make_unique<ClipAdv>(true, a); }});
}

}  // namespace trinity::algo
