// Likelihood-based losses: sft, sft_is, sft_phi (CHORD token weights), dpo (per pair), and the
// expert/usual mixtures mix and mix_chord (CHORD, arXiv 2508.11408):
//   sft      L = Agg(−logp)                 sft_is  L = Agg(−logp·sg(p))
//   sft_phi  L = Agg(−min(logp, log cutoff)·sg(p(1−p)))
//   dpo      L = mean_pairs[−(1−ls)·logσ(βΔ) − ls·logσ(−βΔ)],  Δ = Σ_c(logp−ref) − Σ_r(logp−ref)
//            (Rafailov et al. 2023, arXiv 2305.18290), computed PER PAIR (Trinity sums over the
//            whole micro-batch, [obs]); rows 2k (chosen) and 2k+1 (rejected) form pair k.
//   mix      L = (1−μ)·PPO(usual rows) + μ·SFT(expert rows), each a mean over its own rows in the
//            mini-batch (the normaliser makes Trinity's micro-batch rescaling unnecessary).
#include <algorithm>
#include <cmath>

#include "algorithm/policy_loss.h"

namespace trinity::algo {
namespace {

enum class SftKind { kPlain, kIs, kPhi };

// Token term of the SFT family.
TokenTerm sft_token(SftKind k, double logp, double cutoff_log) {
  switch (k) {
    case SftKind::kPlain: return {-logp, -1};
    case SftKind::kIs: {
      const double p = std::exp(logp);
      return {-logp * p, -p};
    }
    case SftKind::kPhi: {
      const double p = std::exp(logp), phi = p * (1 - p);
      const double lp = std::min(logp, cutoff_log);
      return {-lp * phi, logp <= cutoff_log ? -phi : 0.0};
    }
  }
  return {0, 0};
}

const char* sft_metric(SftKind k) {
  return k == SftKind::kPlain ? "sft_loss" : k == SftKind::kIs ? "sft_is_loss" : "sft_phi_loss";
}

double sft_loss(SftKind k, double cutoff_log, AggMode agg, Rows rows, double weight, const TokenBatch& mb,
                const Normalizer& norm, std::span<float> dlogprob, Metrics& m, const std::string& prefix) {
  auto scale = agg_row_scale(agg, mb, norm, rows);
  auto f = [&](int64_t b, int64_t t) { return sft_token(k, mb.logprob[mb.at(b, t)], cutoff_log); };
  const double loss = accumulate_token_loss(mb, scale, {}, f);
  for (auto& c : scale) c *= weight;
  if (!dlogprob.empty()) accumulate_token_loss(mb, scale, dlogprob, f);
  m.add(prefix + sft_metric(k), loss);
  return loss;
}

class SftLoss : public PolicyLoss {
 public:
  SftLoss(SftKind k, const Args& a) : k_(k), agg_(agg_of(a)) {
    if (k == SftKind::kPhi) {
      const double c = a.f64("cutoff_prob");
      if (c <= 0 || c > 1)
        throw ConfigError("algorithm", strcat(a.where(), ": cutoff_prob must be in (0, 1], got ", c));
      cutoff_log_ = std::log(c);
    }
  }
  unsigned needs() const override { return 0; }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn sft", needs());
    return sft_loss(k_, cutoff_log_, agg_, Rows::kAll, 1.0, mb, norm, dlogprob, m, "");
  }

 private:
  SftKind k_;
  AggMode agg_;
  double cutoff_log_ = 0.0;
};

double log_sigmoid(double x) { return -(std::max(-x, 0.0) + std::log1p(std::exp(-std::fabs(x)))); }
double sigmoid(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

class DpoLoss : public PolicyLoss {
 public:
  explicit DpoLoss(const Args& a) : beta_(a.f64("beta")), ls_(a.f64("label_smoothing")) {
    if (ls_ < 0 || ls_ > 0.5)
      throw ConfigError("algorithm", strcat(a.where(), ": label_smoothing must be in [0, 0.5], got ", ls_));
  }
  unsigned needs() const override { return kNeedRefLogprob; }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate("policy_loss_fn dpo", needs());
    if (mb.B % 2 != 0)
      throw ShapeError("algorithm", strcat("policy_loss_fn dpo: a micro-batch must hold whole (chosen, "
                                           "rejected) pairs, got ", mb.B, " rows"));
    const double npairs = norm.rows / 2;
    auto seq_ratio = [&](int64_t b) {
      double s = 0;
      for (int64_t t = 0; t < mb.T; ++t) {
        const size_t i = mb.at(b, t);
        s += mb.mask[i] * (static_cast<double>(mb.logprob[i]) - mb.ref_logprob[i]);
      }
      return s;
    };
    double loss = 0, chosen = 0, rejected = 0, acc = 0;
    for (int64_t k = 0; k < mb.B / 2; ++k) {
      const double rc = seq_ratio(2 * k), rr = seq_ratio(2 * k + 1), z = beta_ * (rc - rr);
      loss += -(1 - ls_) * log_sigmoid(z) - ls_ * log_sigmoid(-z);
      const double dz = -(1 - ls_) * sigmoid(-z) + ls_ * sigmoid(z);  // dL/dz
      const double g = safe_div(dz * beta_, npairs);                   // dL/d(rc) per pair weight
      if (!dlogprob.empty())
        for (int64_t t = 0; t < mb.T; ++t) {
          dlogprob[mb.at(2 * k, t)] += static_cast<float>(g * mb.mask[mb.at(2 * k, t)]);
          dlogprob[mb.at(2 * k + 1, t)] += static_cast<float>(-g * mb.mask[mb.at(2 * k + 1, t)]);
        }
      chosen += beta_ * rc, rejected += beta_ * rr, acc += (rc > rr) ? 1.0 : 0.0;
    }
    loss = safe_div(loss, npairs);
    m.add("dpo_loss", loss);
    m.add("chosen_reward", safe_div(chosen, npairs));
    m.add("rejected_reward", safe_div(rejected, npairs));
    m.add("accuracy_mean", safe_div(acc, npairs));
    return loss;
  }

 private:
  double beta_, ls_;
};

// CHORD's μ schedule: linear warm-up to peak over W steps, cosine decay to valley over D steps.
double mu_schedule(int64_t step, int64_t w, int64_t d, double peak, double valley) {
  if (step < w) return static_cast<double>(step) / static_cast<double>(w) * peak;
  if (step >= w + d) return valley;
  const double x = static_cast<double>(step - w) / static_cast<double>(d);
  return (peak - valley) * 0.5 * (1 + std::cos(M_PI * x)) + valley;
}

class MixLoss : public PolicyLoss {
 public:
  MixLoss(bool chord, const Args& a) : chord_(chord), p_(ppo_params(a)) {
    const AggMode base = agg_of(a);
    grpo_agg_ = a.has_value("grpo_loss_agg_mode") ? agg_of(a, "grpo_loss_agg_mode") : base;
    sft_agg_ = a.has_value("sft_loss_agg_mode") ? agg_of(a, "sft_loss_agg_mode") : base;
    if (chord) {
      w_ = a.i64("mu_warmup_steps"), d_ = a.i64("mu_decay_steps");
      peak_ = a.f64("mu_peak"), valley_ = a.f64("mu_valley");
      sft_ = a.boolean("enable_phi_function") ? SftKind::kPhi : SftKind::kPlain;
      if (w_ < 0 || d_ < 0)
        throw ConfigError("algorithm", strcat(a.where(), ": mu_warmup_steps and mu_decay_steps must be >= 0"));
    } else {
      peak_ = valley_ = a.f64("mu");
    }
  }
  unsigned needs() const override { return kNeedOldLogprob | kNeedAdvantages; }
  double mu(int64_t step) const { return chord_ ? mu_schedule(step, w_, d_, peak_, valley_) : peak_; }
  double forward_backward(const TokenBatch& mb, const Normalizer& norm, std::span<float> dlogprob,
                          Metrics& m) const override {
    mb.validate(chord_ ? "policy_loss_fn mix_chord" : "policy_loss_fn mix", needs());
    const double mu_v = mu(mb.train_step);
    // usual rows: PPO
    auto scale = agg_row_scale(grpo_agg_, mb, norm, Rows::kUsual);
    auto ppo = [&](int64_t b, int64_t t) {
      const size_t i = mb.at(b, t);
      return ppo_token(p_, mb.advantages[i], mb.logprob[i], mb.old_logprob[i]);
    };
    auto f = [&](int64_t b, int64_t t) { return ppo(b, t).term; };
    const double usual = accumulate_token_loss(mb, scale, {}, f);
    for (auto& c : scale) c *= 1 - mu_v;
    if (!dlogprob.empty()) accumulate_token_loss(mb, scale, dlogprob, f);
    m.add("usual/pg_loss", usual);
    m.add("usual/pg_clipfrac", token_mean_metric(mb, norm, Rows::kUsual, [&](int64_t b, int64_t t) {
            return ppo(b, t).clipped ? 1.0 : 0.0;
          }));
    m.add("usual/pg_clipfrac_lower", token_mean_metric(mb, norm, Rows::kUsual, [&](int64_t b, int64_t t) {
            return ppo(b, t).clipped_lower ? 1.0 : 0.0;
          }));
    m.add("usual/ppo_kl", token_mean_metric(mb, norm, Rows::kUsual, [&](int64_t b, int64_t t) {
            return -ppo(b, t).log_ratio;
          }));
    // expert rows: SFT
    const double expert = sft_loss(sft_, 0.0, sft_agg_, Rows::kExpert, mu_v, mb, norm, dlogprob, m, "expert/");
    const double loss = (1 - mu_v) * usual + mu_v * expert;
    m.add("loss", loss);
    m.set("mu", mu_v);
    return loss;
  }

 private:
  bool chord_;
  PpoParams p_;
  AggMode grpo_agg_ = AggMode::kTokenMean, sft_agg_ = AggMode::kTokenMean;
  int64_t w_ = 0, d_ = 0;
  double peak_ = 0.1, valley_ = 0.1;
  SftKind sft_ = SftKind::kPlain;
};

ArgSpec mix_spec(bool chord) {
  ArgSpec s;
  if (chord) {
    s = {{"mu_warmup_steps", 0, "warm-up steps W (μ rises linearly to mu_peak)"},
         {"mu_decay_steps", 0, "cosine decay steps D (from mu_peak to mu_valley)"},
         {"mu_peak", 0.1, "peak μ"},
         {"mu_valley", 0.1, "final μ"},
         {"enable_phi_function", true, "expert loss sft_phi (true) or sft (false)"}};
  } else {
    s = {{"mu", 0.1, "weight of the expert SFT loss"}};
  }
  const ArgSpec common = {
      {"clip_range", 0.2, "PPO ε on usual rows"},
      {"clip_range_low", nullptr, "PPO ε_low"},
      {"clip_range_high", nullptr, "PPO ε_high"},
      kAggArg,
      {"sft_loss_agg_mode", nullptr, "aggregation of the expert term (default loss_agg_mode)"},
      {"grpo_loss_agg_mode", nullptr, "aggregation of the usual term (default loss_agg_mode)"},
      {"use_dynamic_bsz", nullptr, "accepted for Trinity compatibility; unused (the normaliser is exact)"},
      {"ppo_mini_batch_size", 1, "accepted for Trinity compatibility; unused"},
      {"ppo_micro_batch_size_per_gpu", 1, "accepted for Trinity compatibility; unused"},
      {"ngpus_trainer", 1, "accepted for Trinity compatibility; unused"},
      {"train_batch_size_usual", 1, "accepted for Trinity compatibility; unused"},
      {"train_batch_size_expert", 1, "accepted for Trinity compatibility; unused"}};
  s.insert(s.end(), common.begin(), common.end());
  return s;
}

}  // namespace

void add_sft_losses(std::vector<RegistryEntry<PolicyLoss>>& out) {
  out.push_back(
      {"sft", "Agg(−logp)", {kAggArg}, [](const Args& a) { return std::make_unique<SftLoss>(SftKind::kPlain, a); }});
  out.push_back({"sft_is", "Agg(−logp·sg(p)) (CHORD, arXiv 2508.11408)", {kAggArg}, [](const Args& a) {
                   return std::make_unique<SftLoss>(SftKind::kIs, a);
                 }});
  out.push_back({"sft_phi",
                 "Agg(−min(logp, log cutoff)·sg(p(1−p))) (CHORD-φ, arXiv 2508.11408)",
                 {kAggArg, {"cutoff_prob", 1.0, "clamp logp at log(cutoff_prob), in (0, 1]"}},
                 [](const Args& a) { return std::make_unique<SftLoss>(SftKind::kPhi, a); }});
  out.push_back({"dpo", "−logσ(βΔ) per (chosen, rejected) pair (arXiv 2305.18290)",
                 {{"beta", 0.1, "β"}, {"label_smoothing", 0.0, "conservative-DPO smoothing in [0, 0.5]"}},
                 [](const Args& a) { return std::make_unique<DpoLoss>(a); }});
  out.push_back({"mix", "(1−μ)·PPO(usual) + μ·SFT(expert)", mix_spec(false),
                 [](const Args& a) { return std::make_unique<MixLoss>(false, a); }});
  out.push_back({"mix_chord", "(1−μ(step))·PPO(usual) + μ(step)·SFT-φ(expert) (CHORD, arXiv 2508.11408)",
                 mix_spec(true), [](const Args& a) { return std::make_unique<MixLoss>(true, a); }});
}

}  // namespace trinity::algo
