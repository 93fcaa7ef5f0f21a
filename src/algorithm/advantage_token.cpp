// Token-level advantages (Trinity computes these in the trainer):
//   ppo   GAE (Schulman et al., arXiv 1506.02438): δ_t = r_t + γV_{t+1} − V_t (V_len = 0),
//         Â_t = δ_t + γλÂ_{t+1} over the row's response length; returns = Â + V; advantages are
//         whitened over all masked tokens of the batch: (Â − μ)/sqrt(var_unbiased + 1e-8).
//   reinforceplusplus  G_t = Σ_{k≥t} γ^{k−t} r_k, whitened over the batch (arXiv 2501.03262).
//   on_policy_distill  A_t = kl_coef·(teacher_t − old_t) (on-policy distillation, reverse KL).
//   jsd   A_t = −kl_coef·JSD_β(old_t, teacher_t) on the sampled token's logprobs.
// Token rewards: the given per-token rewards, else the scalar reward at the last response token.
#include <algorithm>
#include <cmath>

#include "algorithm/advantage.h"

namespace trinity::algo {
namespace {

using namespace adv_detail;

double safe_div(double a, double b) { return b != 0 ? a / b : 0.0; }

// Masked whitening in place: (x − mean)/sqrt(var + 1e-8), unbiased var; zeros outside the mask.
void masked_whiten(const AdvInput& in, std::vector<double>& x) {
  double s = 0, n = 0;
  for (size_t i = 0; i < x.size(); ++i) s += in.mask[i] * x[i], n += in.mask[i];
  const double mu = safe_div(s, n);
  double v = 0;
  for (size_t i = 0; i < x.size(); ++i) v += in.mask[i] * (x[i] - mu) * (x[i] - mu);
  v = n > 1 ? v / (n - 1) : 0.0;
  const double inv = 1.0 / std::sqrt(v + 1e-8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = in.mask[i] != 0 ? (x[i] - mu) * inv * in.mask[i] : 0.0;
}


class GaeAdv : public AdvantageFn {
 public:
  explicit GaeAdv(const Args& a) : gamma_(a.f64("gamma")), lam_(a.f64("lam")) {}
  unsigned needs() const override { return kAdvNeedValues; }
  bool trainer_side() const override { return true; }
  AdvOutput compute(const AdvInput& in, Rng&) const override {
    in.validate("advantage_fn ppo", needs());
    AdvOutput out = make_output(in);
    const auto r = token_rewards(in);
    std::vector<double> adv(r.size(), 0.0);
    for (int64_t b = 0; b < in.B; ++b) {
      double next_v = 0, next_a = 0;
      for (int64_t t = in.length(b) - 1; t >= 0; --t) {
        const size_t i = in.at(b, t);
        const double delta = r[i] + gamma_ * next_v - in.values[i];
        next_a = delta + gamma_ * lam_ * next_a;
        adv[i] = next_a, next_v = in.values[i];
        out.returns[i] = static_cast<float>((next_a + in.values[i]) * in.mask[i]);
      }
    }
    masked_whiten(in, adv);
    for (size_t i = 0; i < adv.size(); ++i) out.advantages[i] = static_cast<float>(adv[i]);
    std::fill(out.keep.begin(), out.keep.end(), 1);
    finish_rows(out);
    return out;
  }

 private:
  double gamma_, lam_;
};

class ReinforcePlusPlusAdv : public AdvantageFn {
 public:
  explicit ReinforcePlusPlusAdv(const Args& a) : gamma_(a.f64("gamma")) {}
  bool trainer_side() const override { return true; }
  AdvOutput compute(const AdvInput& in, Rng&) const override {
    in.validate("advantage_fn reinforceplusplus", 0);
    AdvOutput out = make_output(in);
    const auto r = token_rewards(in);
    std::vector<double> g(r.size(), 0.0);
    for (int64_t b = 0; b < in.B; ++b) {
      double ret = 0;
      for (int64_t t = in.length(b) - 1; t >= 0; --t) {
        ret = r[in.at(b, t)] + gamma_ * ret;
        g[in.at(b, t)] = ret;
        out.returns[in.at(b, t)] = static_cast<float>(ret * in.mask[in.at(b, t)]);
      }
    }
    masked_whiten(in, g);
    for (size_t i = 0; i < g.size(); ++i) out.advantages[i] = static_cast<float>(g[i]);
    std::fill(out.keep.begin(), out.keep.end(), 1);
    finish_rows(out);
    return out;
  }

 private:
  double gamma_;
};

// Row statistics of per-token quantities for the distillation metrics.
void seq_sum_stats(const AdvInput& in, const std::vector<double>& x, const std::string& name, Metrics& m) {
  std::vector<double> rows;
  for (int64_t b = 0; b < in.B; ++b) {
    double s = 0;
    for (int64_t t = 0; t < in.T; ++t) s += x[in.at(b, t)] * in.mask[in.at(b, t)];
    rows.push_back(s);
  }
  m.set(name + "/mean", mean(rows));
  m.set(name + "/std", std_unbiased(rows));
}

void token_mean_stat(const AdvInput& in, const std::vector<float>& a, const std::string& name, Metrics& m) {
  double s = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * in.mask[i], n += in.mask[i];
  m.set(name, safe_div(s, n));
}

class DistillAdv : public AdvantageFn {
 public:
  DistillAdv(bool jsd, const Args& a) : jsd_(jsd), coef_(a.f64("kl_coef")) {
    if (jsd) {
      beta_ = a.f64("lambda_coef"), temp_ = a.f64("temperature");
      if (beta_ < 0 || beta_ > 1)
        throw ConfigError("algorithm", strcat(a.where(), ": lambda_coef must be in [0, 1], got ", beta_));
      if (temp_ <= 0) throw ConfigError("algorithm", strcat(a.where(), ": temperature must be > 0, got ", temp_));
    }
  }
  unsigned needs() const override { return kAdvNeedOldLogprob | kAdvNeedTeacher; }
  bool trainer_side() const override { return true; }
  double jsd(double s, double t) const {
    if (temp_ != 1.0) s /= temp_, t /= temp_;
    if (beta_ == 0) return s - t;
    if (beta_ == 1) return t - s;
    const double x = s + std::log(1 - beta_), y = t + std::log(beta_);
    const double mx = std::max(x, y), logm = mx + std::log(std::exp(x - mx) + std::exp(y - mx));
    return beta_ * (t - logm) + (1 - beta_) * (s - logm);
  }
  AdvOutput compute(const AdvInput& in, Rng&) const override {
    in.validate(jsd_ ? "advantage_fn jsd" : "advantage_fn on_policy_distill", needs());
    AdvOutput out = make_output(in);
    std::vector<double> x(static_cast<size_t>(in.B * in.T), 0.0);
    for (size_t i = 0; i < x.size(); ++i) {
      const double s = in.old_logprob[i], t = in.teacher_logprob[i];
      x[i] = jsd_ ? jsd(s, t) : s - t;
      const double a = jsd_ ? -coef_ * x[i] : coef_ * (t - s);
      out.advantages[i] = out.returns[i] = static_cast<float>(a * in.mask[i]);
    }
    std::fill(out.keep.begin(), out.keep.end(), 1);
    finish_rows(out);
    if (jsd_) {
      double s = 0, n = 0;
      for (size_t i = 0; i < x.size(); ++i) s += x[i] * in.mask[i], n += in.mask[i];
      const double mu = safe_div(s, n);
      double v = 0;
      for (size_t i = 0; i < x.size(); ++i) v += in.mask[i] * (x[i] - mu) * (x[i] - mu);
      out.metrics.set("jsd/mean", mu);
      out.metrics.set("jsd/std", n > 1 ? std::sqrt(v / (n - 1)) : 0.0);
    } else {
      seq_sum_stats(in, x, "kl", out.metrics);
    }
    token_mean_stat(in, out.advantages, "advantages/mean", out.metrics);
    return out;
  }

 private:
  bool jsd_;
  double coef_, beta_ = 0.5, temp_ = 1.0;
};

}  // namespace

void add_token_advantages(std::vector<RegistryEntry<AdvantageFn>>& out) {
  out.push_back({"ppo", "GAE(γ, λ) with a critic, batch-whitened (arXiv 1506.02438)",
                 {{"gamma", 1.0, "discount γ"}, {"lam", 1.0, "GAE λ"}},
                 [](const Args& a) { return std::make_unique<GaeAdv>(a); }});
  out.push_back({"reinforceplusplus", "whiten(Σ_{k≥t} γ^{k−t} r_k) over the batch (arXiv 2501.03262)",
                 {{"gamma", 1.0, "discount γ"}},
                 [](const Args& a) { return std::make_unique<ReinforcePlusPlusAdv>(a); }});
  out.push_back({"on_policy_distill", "kl_coef·(teacher − old) per token (reverse-KL distillation)",
                 {{"kl_coef", 1.0, "scale"}},
                 [](const Args& a) { return std::make_unique<DistillAdv>(false, a); }});
  out.push_back({"jsd", "−kl_coef·JSD_β(old, teacher) per token",
                 {{"kl_coef", 1.0, "scale"},
                  {"lambda_coef", 0.5, "β of the generalised JSD (0: s − t, 1: t − s)"},
                  {"temperature", 1.0, "divide logprobs by this"},
                  {"chunk_size", nullptr, "accepted for Trinity compatibility (memory only); unused"}},
                 [](const Args& a) { return std::make_unique<DistillAdv>(true, a); }});
}

}  // namespace trinity::algo
