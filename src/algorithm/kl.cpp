// KL estimators, KL loss, KL reward penalty and the adaptive controller; see kl.h.
#include "algorithm/kl.h"

#include <algorithm>
#include <cmath>

namespace trinity::algo {

KlFn::KlFn(KlKind kind, const Args& args)
    : kind_(kind), coef_(args.f64("kl_coef")), adaptive_(args.boolean("adaptive")) {
  if (adaptive_) {
    if (!args.has_value("target_kl") || !args.has_value("horizon"))
      throw ConfigError("algorithm", strcat(args.where(), ": adaptive: true needs target_kl and horizon"));
    target_ = args.f64("target_kl"), horizon_ = args.f64("horizon");
    if (target_ <= 0 || horizon_ <= 0)
      throw ConfigError("algorithm", strcat(args.where(), ": target_kl and horizon must be > 0, got ",
                                            target_, " and ", horizon_));
  }
}

TokenTerm KlFn::token(double logp, double ref, double old, bool has_old) const {
  const double x = ref - logp;  // dx/dlogp = -1
  switch (kind_) {
    case KlKind::kNone: return {0, 0};
    case KlKind::kK1: return {logp - ref, 1};
    case KlKind::kK2: return {0.5 * x * x, -x};
    case KlKind::kK3: return {std::exp(x) - x - 1, 1 - std::exp(x)};
    case KlKind::kLowVarKl: {
      const bool xin = x >= -20 && x <= 20;
      const double xc = std::clamp(x, -20.0, 20.0);
      const double k = std::exp(xc) - xc - 1;
      const bool kin = k >= -10 && k <= 10;
      return {std::clamp(k, -10.0, 10.0), (xin && kin) ? 1 - std::exp(xc) : 0.0};
    }
    case KlKind::kAbs: {
      const double d = logp - ref;
      return {std::fabs(d), d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0};
    }
    case KlKind::kCorrectedK3: {
      const double k3 = std::exp(x) - x - 1, dk3 = 1 - std::exp(x);
      if (!has_old) return {k3, dk3};
      const double r = std::exp(logp - old);
      const double w = std::clamp(r, 0.0, 2.0), dw = r <= 2.0 ? r : 0.0;
      return {w * k3, dw * k3 + w * dk3};
    }
  }
  return {0, 0};
}

double KlFn::loss(const TokenBatch& mb, const Normalizer& norm, AggMode mode, std::span<float> dlogprob,
                  Metrics& metrics) const {
  if (is_none()) return 0.0;
  mb.validate("kl_loss_fn", kNeedRefLogprob);
  const bool has_old = !mb.old_logprob.empty();
  const auto scale = agg_row_scale(mode, mb, norm);
  // The aggregated KL (unscaled) is linear, so its gradient is the scaled token derivative.
  const double agg = accumulate_token_loss(mb, scale, {}, [&](int64_t b, int64_t t) {
    const size_t i = mb.at(b, t);
    return token(mb.logprob[i], mb.ref_logprob[i], has_old ? mb.old_logprob[i] : 0.0, has_old);
  });
  if (!dlogprob.empty())
    accumulate_token_loss(mb, scale, dlogprob, [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      TokenTerm k = token(mb.logprob[i], mb.ref_logprob[i], has_old ? mb.old_logprob[i] : 0.0, has_old);
      return TokenTerm{0, coef_ * k.dlogp};
    });
  metrics.add("kl_loss", agg);
  metrics.set("kl_coef", coef_);
  return coef_ * agg;
}

void KlFn::apply_penalty(std::span<float> token_rewards, std::span<const float> old_logprob,
                         std::span<const float> ref_logprob, std::span<const float> mask, int64_t B,
                         int64_t T, Metrics& metrics) {
  if (is_none()) return;
  const size_t n = static_cast<size_t>(B * T);
  if (old_logprob.size() != n || ref_logprob.size() != n)
    throw ValueError("algorithm", "kl_penalty_fn: needs old (rollout) and reference logprobs for every "
                                  "experience");
  double sum_rows = 0, rows = 0;
  for (int64_t b = 0; b < B; ++b) {
    double s = 0, k = 0;
    for (int64_t t = 0; t < T; ++t) {
      const size_t i = static_cast<size_t>(b * T + t);
      const double kl = token(old_logprob[i], ref_logprob[i], 0, false).value * mask[i];
      token_rewards[i] -= static_cast<float>(coef_ * kl);
      s += kl, k += mask[i];
    }
    if (k > 0) sum_rows += s / k, rows += 1;
  }
  const double current = safe_div(sum_rows, rows);
  metrics.set("kl", current);
  metrics.set("kl_coef", coef_);
  update(current, B);
}

void KlFn::update(double current_kl, int64_t batch_size) {
  if (!adaptive_) return;
  const double e = std::clamp(current_kl / target_ - 1.0, -0.2, 0.2);
  coef_ *= 1.0 + e * static_cast<double>(batch_size) / horizon_;
}

const Registry<KlFn>& kl_registry() {
  static const Registry<KlFn> reg = [] {
    const ArgSpec spec = {
        {"adaptive", false, "adapt kl_coef towards target_kl (needs target_kl, horizon)"},
        {"kl_coef", 0.001, "coefficient of the KL term"},
        {"target_kl", nullptr, "adaptive controller target"},
        {"horizon", nullptr, "adaptive controller horizon"},
    };
    auto mk = [&](const char* name, KlKind k, const char* doc) {
      return RegistryEntry<KlFn>{name, doc, spec,
                                 [k](const Args& a) { return std::make_unique<KlFn>(k, a); }};
    };
    return Registry<KlFn>(
        "kl_fn", {mk("none", KlKind::kNone, "no KL term"),
                  mk("k1", KlKind::kK1, "logp − ref"),
                  mk("k2", KlKind::kK2, "½(logp − ref)²"),
                  mk("k3", KlKind::kK3, "exp(ref − logp) − (ref − logp) − 1"),
                  mk("low_var_kl", KlKind::kLowVarKl, "k3 with log-ratio clamped to ±20, value to ±10"),
                  mk("abs", KlKind::kAbs, "|logp − ref|"),
                  mk("corrected_k3", KlKind::kCorrectedK3, "clamp(exp(logp − old), 0, 2)·k3")});
  }();
  return reg;
}

}  // namespace trinity::algo
