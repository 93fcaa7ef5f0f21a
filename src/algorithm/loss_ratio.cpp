// Ratio-based policy losses: ppo, gspo, cispo, sapo, topr, opmd, sppo, importance_sampling.
// Notation: lr = logp − old, r = exp(lr), A = advantage, m = mask, sg = stop-gradient; each
// token term is aggregated with the loss's loss_agg_mode (aggregation.h). Formulas and papers are in
// docs/algorithms.md and next to each class.
#include <algorithm>
#include <cmath>

#include "algorithm/policy_loss.h"

namespace trinity::algo {

PpoParams ppo_params(const Args& a) {
  PpoParams p;
  const auto base = a.opt_f64("clip_range");
  const auto lo = a.has_value("clip_range_low") ? a.opt_f64("clip_range_low") : base;
  const auto hi = a.has_value("clip_range_high") ? a.opt_f64("clip_range_high") : base;
  if (!lo || !hi)
    throw ConfigError("algorithm", strcat(a.where(), ": set clip_range, or both clip_range_low and "
                                                     "clip_range_high"));
  p.clip_low = *lo, p.clip_high = *hi;
  if (a.values().count("clip_ratio_c")) p.clip_ratio_c = a.f64("clip_ratio_c");
  if (p.clip_ratio_c <= 1.0)
    throw ConfigError("algorithm", strcat(a.where(), ": clip_ratio_c must be > 1, got ", p.clip_ratio_c));
  if (a.values().count("fallback_to_policy_gradient"))
    p.fallback_to_policy_gradient = a.boolean("fallback_to_policy_gradient");
  return p;
}

PpoToken ppo_token(const PpoParams& p, double adv, double logp, double old) {
  PpoToken out;
  double lr = logp - old, dr;  // dr = d r / d logp
  double r;
  if (p.fallback_to_policy_gradient) {
    lr = 0, r = 1, dr = 1;  // lr = logp − sg(logp): r = 1 with the REINFORCE gradient
  } else if (lr < -20 || lr > 20) {
    lr = std::clamp(lr, -20.0, 20.0), r = std::exp(lr), dr = 0;
  } else {
    r = std::exp(lr), dr = r;
  }
  out.log_ratio = lr;
  const double l1 = -adv * r, d1 = -adv * dr;
  const bool in = r >= 1 - p.clip_low && r <= 1 + p.clip_high;
  const double rc = std::clamp(r, 1 - p.clip_low, 1 + p.clip_high);
  const double l2 = -adv * rc, d2 = in ? -adv * dr : 0.0;
  out.clipped = l2 > l1;
  TokenTerm t = out.clipped ? TokenTerm{l2, d2} : TokenTerm{l1, d1};
  if (adv < 0) {
    const double l3 = -adv * p.clip_ratio_c;
    if (t.value > l3) out.clipped_lower = true, t = {l3, 0.0};
  }
  out.term = t;
  return out;
}

AggMode agg_of(const Args& a, const char* key) {
  return parse_agg_mode(a.str(key), a.where());
}

namespace {

// Per-row masked mean of (logp − old), [B].
std::vector<double> row_mean_log_ratio(const TokenBatch& mb) {
  std::vector<double> s(static_cast<size_t>(mb.B), 0.0);
  for (int64_t b = 0; b < mb.B; ++b) {
    double acc = 0, n = 0;
    for (int64_t t = 0; t < mb.T; ++t) {
      const size_t i = mb.at(b, t);
      acc += mb.mask[i] * (mb.logprob[i] - mb.old_logprob[i]), n += mb.mask[i];
    }
    s[static_cast<size_t>(b)] = acc / (n + 1e-8);
  }
  return s;
}

// Mean over rows with tokens of v[b], normalised by the mini-batch row count (additive metric).
double seq_mean_metric(const TokenBatch& mb, const Normalizer& norm, const std::vector<double>& v) {
  double s = 0;
  for (int64_t b = 0; b < mb.B; ++b)
    if (row_tokens(mb, b) > 0) s += v[static_cast<size_t>(b)];
  return safe_div(s, norm.seqs);
}

double neg_lr(const TokenBatch& mb, int64_t b, int64_t t) {
  const size_t i = mb.at(b, t);
  return std::clamp(static_cast<double>(mb.old_logprob[i]) - mb.logprob[i], -20.0, 20.0);
}

// ppo: clipped surrogate with dual clip, log-ratio clamp, optional sequence masking (DeepSeek-V3.2:
// drop A<0 tokens of sequences whose mean(old − logp) > delta), optional REINFORCE fallback.
class PpoLoss : public PolicyLoss {
 public:
  bool takes_rollout_is() const override { return true; }
  explicit PpoLoss(const Args& a)
      : p_(ppo_params(a)), agg_(agg_of(a)), seq_mask_(a.boolean("enable_sequence_masking")),
        delta_(a.f64("delta_sequence_masking")) {}
  unsigned needs() const override { return kNeedOldLogprob | kNeedAdvantages; }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn ppo", needs());
    std::vector<double> seq_kl(static_cast<size_t>(mb.B), 0.0);
    if (seq_mask_) {
      auto s = row_mean_log_ratio(mb);
      for (size_t b = 0; b < s.size(); ++b) seq_kl[b] = -s[b];
    }
    auto masked = [&](int64_t b, int64_t t) {
      return seq_mask_ && mb.advantages[mb.at(b, t)] < 0 && seq_kl[static_cast<size_t>(b)] > delta_;
    };
    const auto scale = agg_row_scale(agg_, mb, norm);
    const double loss = accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      if (masked(b, t)) return TokenTerm{0, 0};
      const size_t i = mb.at(b, t);
      return ppo_token(p_, mb.advantages[i], mb.logprob[i], mb.old_logprob[i]).term;
    });
    auto tok = [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      return ppo_token(p_, mb.advantages[i], mb.logprob[i], mb.old_logprob[i]);
    };
    m.add("pg_loss", loss);
    m.add("pg_clipfrac", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return tok(b, t).clipped ? 1.0 : 0.0;
          }));
    m.add("pg_clipfrac_lower", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return tok(b, t).clipped_lower ? 1.0 : 0.0;
          }));
    m.add("ppo_kl", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return -tok(b, t).log_ratio;
          }));
    if (seq_mask_) {
      m.add("seq_mask/masked_tokens", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
              return masked(b, t) ? 1.0 : 0.0;
            }));
      m.add("seq_mask/mean_sequence_kl", seq_mean_metric(mb, norm, seq_kl));
    }
    return loss;
  }

 private:
  PpoParams p_;
  AggMode agg_;
  bool seq_mask_;
  double delta_;
};

// gspo (Zheng et al. 2025, arXiv 2507.18071): sequence ratio s = exp(mean_t lr) used at every token
// with gradient ∇logp_t (ℓ_t = logp_t − sg(logp_t) + sg(mean lr)); L = max(−A·s, −A·clip(s)).
class GspoLoss : public PolicyLoss {
 public:
  // Defaults 3e-4 / 4e-4 apply only when none of clip_range, clip_range_low, clip_range_high is set,
  // so `clip_range: 0.2` alone sets both sides (as in Trinity, where low/high default to None).
  explicit GspoLoss(const Args& a) : agg_(agg_of(a)) {
    if (a.has_value("clip_range") || a.has_value("clip_range_low") || a.has_value("clip_range_high")) {
      p_ = ppo_params(a);
    } else {
      p_.clip_low = 3e-4, p_.clip_high = 4e-4;
    }
  }
  unsigned needs() const override { return kNeedOldLogprob | kNeedAdvantages; }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn gspo", needs());
    const auto seq = row_mean_log_ratio(mb);
    auto tok = [&](int64_t b, int64_t t, bool& clipped) {
      const double s = std::exp(std::clamp(seq[static_cast<size_t>(b)], -20.0, 20.0));
      const double a = mb.advantages[mb.at(b, t)];
      const double l1 = -a * s, l2 = -a * std::clamp(s, 1 - p_.clip_low, 1 + p_.clip_high);
      const bool in = s >= 1 - p_.clip_low && s <= 1 + p_.clip_high;
      clipped = l2 > l1;
      return clipped ? TokenTerm{l2, in ? -a * s : 0.0} : TokenTerm{l1, -a * s};
    };
    const auto scale = agg_row_scale(agg_, mb, norm);
    bool c;
    const double loss = accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      return tok(b, t, c);
    });
    m.add("pg_loss", loss);
    m.add("pg_clipfrac", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            bool cl;
            tok(b, t, cl);
            return cl ? 1.0 : 0.0;
          }));
    m.add("ppo_kl", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) { return neg_lr(mb, b, t); }));
    std::vector<double> neg_seq(seq.size());
    for (size_t b = 0; b < seq.size(); ++b) neg_seq[b] = -seq[b];
    m.add("ppo_kl_seq", seq_mean_metric(mb, norm, neg_seq));
    return loss;
  }

 private:
  PpoParams p_;
  AggMode agg_;
};

// Base for "weight × logp" losses: L_t = −w_t·logp_t + extra, with w_t detached.
// cispo (MiniMax-M1, arXiv 2506.13585): L = −A·sg(clip(r, 1−lo, 1+hi))·sg(M)·logp.
class CispoLoss : public PolicyLoss {
 public:
  bool takes_rollout_is() const override { return true; }
  explicit CispoLoss(const Args& a)
      : lo_(a.f64("clip_range_low")), hi_(a.f64("clip_range_high")), mask_clip_(a.boolean("enable_mask_clip")),
        mlo_(a.f64("mask_clip_range_low")), mhi_(a.f64("mask_clip_range_high")), agg_(agg_of(a)) {}
  unsigned needs() const override { return kNeedOldLogprob | kNeedAdvantages; }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn cispo", needs());
    auto keep = [&](size_t i) {
      if (!mask_clip_) return true;
      const double r = std::exp(static_cast<double>(mb.logprob[i]) - mb.old_logprob[i]);
      const double a = mb.advantages[i];
      return !((r > 1 + mhi_ && a > 0) || (r < 1 - mlo_ && a < 0));
    };
    const auto scale = agg_row_scale(agg_, mb, norm);
    const double loss = accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      const double r = std::exp(static_cast<double>(mb.logprob[i]) - mb.old_logprob[i]);
      const double w = mb.advantages[i] * std::clamp(r, 1 - lo_, 1 + hi_) * (keep(i) ? 1.0 : 0.0);
      return TokenTerm{-w * mb.logprob[i], -w};
    });
    m.add("cispo_loss", loss);
    m.add("ppo_kl", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) { return neg_lr(mb, b, t); }));
    m.add("unmasked_frac", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return keep(mb.at(b, t)) ? 1.0 : 0.0;
          }));
    return loss;
  }

 private:
  double lo_, hi_;
  bool mask_clip_;
  double mlo_, mhi_;
  AggMode agg_;
};

// sapo (arXiv 2511.20347): gate f = σ(τ(r−1))·4/τ, τ = τ_pos if A > 0 else τ_neg;
// L = −A·sg(f)·logp, so the gradient is −A·f.
class SapoLoss : public PolicyLoss {
 public:
  bool takes_rollout_is() const override { return true; }
  explicit SapoLoss(const Args& a) : tp_(a.f64("tau_pos")), tn_(a.f64("tau_neg")), agg_(agg_of(a)) {
    if (tn_ < tp_ || tp_ <= 0)
      throw ConfigError("algorithm", strcat(a.where(), ": need 0 < tau_pos <= tau_neg, got tau_pos=", tp_,
                                            " tau_neg=", tn_));
  }
  unsigned needs() const override { return kNeedOldLogprob | kNeedAdvantages; }
  double gate(double a, double r) const {
    const double tau = a > 0 ? tp_ : tn_;
    return 1.0 / (1.0 + std::exp(-tau * (r - 1))) * 4.0 / tau;
  }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn sapo", needs());
    auto ratio = [&](size_t i) { return std::exp(static_cast<double>(mb.logprob[i]) - mb.old_logprob[i]); };
    const auto scale = agg_row_scale(agg_, mb, norm);
    const double loss = accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      const double w = mb.advantages[i] * gate(mb.advantages[i], ratio(i));
      return TokenTerm{-w * mb.logprob[i], -w};
    });
    m.add("sapo_loss", loss);
    m.add("ppo_kl", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return static_cast<double>(mb.old_logprob[mb.at(b, t)]) - mb.logprob[mb.at(b, t)];
          }));
    m.add("avg_soft_gate", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            const size_t i = mb.at(b, t);
            return gate(mb.advantages[i], ratio(i));
          }));
    m.add("avg_ratio", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) { return ratio(mb.at(b, t)); }));
    m.add("pos_adv_frac", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return mb.advantages[mb.at(b, t)] > 0 ? 1.0 : 0.0;
          }));
    return loss;
  }

 private:
  double tp_, tn_;
  AggMode agg_;
};

// topr (Tapered Off-Policy REINFORCE, arXiv 2503.14286): α = clamp(r, 0, 1) if A ≤ threshold else 1;
// L = −sg(α)·A·logp.
class ToprLoss : public PolicyLoss {
 public:
  bool takes_rollout_is() const override { return true; }
  explicit ToprLoss(const Args& a) : thr_(a.f64("advantage_threshold")), agg_(agg_of(a)) {}
  unsigned needs() const override { return kNeedOldLogprob | kNeedAdvantages; }
  double alpha(const TokenBatch& mb, size_t i) const {
    if (mb.advantages[i] > thr_) return 1.0;
    return std::clamp(std::exp(static_cast<double>(mb.logprob[i]) - mb.old_logprob[i]), 0.0, 1.0);
  }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn topr", needs());
    const auto scale = agg_row_scale(agg_, mb, norm);
    const double loss = accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      const double w = alpha(mb, i) * mb.advantages[i];
      return TokenTerm{-w * mb.logprob[i], -w};
    });
    m.add("topr_loss", loss);
    m.add("avg_alpha", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) { return alpha(mb, mb.at(b, t)); }));
    m.add("avg_ratio", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return std::exp(static_cast<double>(mb.logprob[mb.at(b, t)]) - mb.old_logprob[mb.at(b, t)]);
          }));
    return loss;
  }

 private:
  double thr_;
  AggMode agg_;
};

// opmd (On-Policy Mirror Descent, Trinity-RFT arXiv 2505.17826 §A): L = Agg(−A·logp)/(1+τ).
class OpmdLoss : public PolicyLoss {
 public:
  explicit OpmdLoss(const Args& a) : tau_(a.f64("tau")), agg_(agg_of(a)) {
    if (tau_ <= -1) throw ConfigError("algorithm", strcat(a.where(), ": tau must be > -1, got ", tau_));
  }
  unsigned needs() const override { return kNeedAdvantages; }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn opmd", needs());
    const auto scale = agg_row_scale(agg_, mb, norm);
    const double k = 1.0 / (1.0 + tau_);
    const double loss = accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      return TokenTerm{-k * mb.advantages[i] * mb.logprob[i], -k * mb.advantages[i]};
    });
    m.add("opmd_loss", loss);
    return loss;
  }

 private:
  double tau_;
  AggMode agg_;
};

// sppo (arXiv 2405.00675 style, Trinity variant): in-range = 1/(1+ε) ≤ sg(r) ≤ 1+ε;
// L = −A·(logp − old)·1[in-range].
class SppoLoss : public PolicyLoss {
 public:
  bool takes_rollout_is() const override { return true; }
  explicit SppoLoss(const Args& a) : eps_(a.f64("epsilon")), agg_(agg_of(a)) {}
  unsigned needs() const override { return kNeedOldLogprob | kNeedAdvantages; }
  bool in_range(const TokenBatch& mb, size_t i) const {
    const double r = std::exp(static_cast<double>(mb.logprob[i]) - mb.old_logprob[i]);
    return r >= 1 / (1 + eps_) && r <= 1 + eps_;
  }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn sppo", needs());
    const auto scale = agg_row_scale(agg_, mb, norm);
    const double loss = accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      if (!in_range(mb, i)) return TokenTerm{0, 0};
      const double a = mb.advantages[i];
      return TokenTerm{-a * (static_cast<double>(mb.logprob[i]) - mb.old_logprob[i]), -a};
    });
    m.add("pg_loss", loss);
    m.add("pg_clipfrac", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return in_range(mb, mb.at(b, t)) ? 0.0 : 1.0;
          }));
    return loss;
  }

 private:
  double eps_;
  AggMode agg_;
};

// importance_sampling: L = −A·exp(clamp(logp − old, ±20)).
class IsLoss : public PolicyLoss {
 public:
  bool takes_rollout_is() const override { return true; }
  explicit IsLoss(const Args& a) : agg_(agg_of(a)) {}
  unsigned needs() const override { return kNeedOldLogprob | kNeedAdvantages; }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn importance_sampling", needs());
    const auto scale = agg_row_scale(agg_, mb, norm);
    const double loss = accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      const double lr = static_cast<double>(mb.logprob[i]) - mb.old_logprob[i];
      const double r = std::exp(std::clamp(lr, -20.0, 20.0));
      const double a = mb.advantages[i];
      return TokenTerm{-a * r, (lr >= -20 && lr <= 20) ? -a * r : 0.0};
    });
    m.add("pg_loss", loss);
    m.add("ratio/mean", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
            return std::exp(-neg_lr(mb, b, t));
          }));
    m.add("approx_kl", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) { return neg_lr(mb, b, t); }));
    return loss;
  }

 private:
  AggMode agg_;
};

template <class L>
RegistryEntry<PolicyLoss> entry(const char* name, const char* doc, ArgSpec spec) {
  return {name, doc, std::move(spec), [](const Args& a) { return std::make_unique<L>(a); }};
}

}  // namespace

void add_ratio_losses(std::vector<RegistryEntry<PolicyLoss>>& out) {
  out.push_back(
      entry<PpoLoss>("ppo", "clipped surrogate max(−A·r, −A·clip(r)), dual clip for A<0 (arXiv 1707.06347, 1912.09729)",
                     {{"clip_range", 0.2, "ε for both sides"},
                      {"clip_range_low", nullptr, "ε_low (overrides clip_range)"},
                      {"clip_range_high", nullptr, "ε_high (overrides clip_range); DAPO clip-higher uses 0.28"},
                      {"clip_ratio_c", 3.0, "dual-clip bound c (> 1) for A < 0"},
                      kAggArg,
                      {"enable_sequence_masking", false, "drop A<0 tokens of sequences with mean(old−logp) > delta"},
                      {"delta_sequence_masking", 0.1, "sequence-masking KL threshold"},
                      {"fallback_to_policy_gradient", false, "use r = 1 with the REINFORCE gradient"}}));
  out.push_back(entry<GspoLoss>(
      "gspo", "sequence-level ratio exp(mean_t lr), clipped (arXiv 2507.18071)",
      {{"clip_range", nullptr, "ε for both sides (when low/high unset)"},
       {"clip_range_low", nullptr, "ε_low (3e-4 when no clip arg is set)"},
       {"clip_range_high", nullptr, "ε_high (4e-4 when no clip arg is set)"},
       {"loss_agg_mode", "seq-mean-token-mean", "loss aggregation (aggregation.h)"}}));
  out.push_back(entry<CispoLoss>("cispo", "−A·sg(clip(r, 1−lo, 1+hi))·logp (MiniMax-M1, arXiv 2506.13585)",
                                 {{"clip_range_low", 1.0, "lower clip ε (1.0 = no lower bound)"},
                                  {"clip_range_high", 0.28, "upper clip ε"},
                                  {"enable_mask_clip", false, "zero tokens with (r > 1+mhi, A>0) or (r < 1−mlo, A<0)"},
                                  {"mask_clip_range_low", 1.0, "mask lower ε"},
                                  {"mask_clip_range_high", 0.28, "mask upper ε"},
                                  kAggArg}));
  out.push_back(
      entry<SapoLoss>("sapo", "soft gate σ(τ(r−1))·4/τ instead of clipping (arXiv 2511.20347)",
                      {{"tau_pos", 1.0, "τ for A > 0"}, {"tau_neg", 1.05, "τ for A ≤ 0 (≥ tau_pos)"}, kAggArg}));
  out.push_back(entry<ToprLoss>("topr",
                                "tapered off-policy REINFORCE −sg(clamp(r,0,1))·A·logp for A ≤ thr (arXiv 2503.14286)",
                                {{"advantage_threshold", 0.0, "A above this uses α = 1"}, kAggArg}));
  out.push_back(entry<OpmdLoss>("opmd", "−A·logp/(1+τ) (Trinity-RFT OPMD, arXiv 2505.17826)",
                                {{"tau", 1.0, "regularisation strength"}, kAggArg}));
  out.push_back(entry<SppoLoss>("sppo", "−A·(logp − old) on tokens with 1/(1+ε) ≤ r ≤ 1+ε",
                                {{"epsilon", 0.3, "ratio band"}, kAggArg}));
  out.push_back(entry<IsLoss>("importance_sampling", "−A·exp(clamp(logp − old, ±20))", {kAggArg}));
}

}  // namespace trinity::algo
