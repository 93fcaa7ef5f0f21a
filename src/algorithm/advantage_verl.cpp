// DataProto-style ("verl") advantage functions: Trinity-RFT runs these in the trainer on
// token_level_rewards (so a KL reward penalty applies first), grouped by uid = task id:
//   grpo_verl    a = (s − mean_g s)/(std_g s + ε), s = Σ_t token reward (deprecated GRPOAdvantageFn)
//   opmd_verl    a = s − b, b = mean_g s or τ·log-mean-exp(s/τ) (deprecated OPMDAdvantageFn)
//   asymre_verl  a = s − (mean_g s + shift) (deprecated ASYMREAdvantageFn)
//   remax        A_t = Σ_{k≥t} r_k·m_k − b·m_t, b the reward of the greedy rollout (ReMax,
//                arXiv 2310.10505); returns = Σ_{k≥t} r_k·m_k
// A group of one gets a zero baseline (grpo_verl: mean 0, std 1). Without token rewards s equals the
// scalar reward, so the first three equal grpo / opmd / asymre exactly (tested).
#include <cmath>

#include "algorithm/advantage.h"

namespace trinity::algo {

namespace adv_detail {

std::vector<double> sequence_scores(const AdvInput& in) {
  std::vector<double> s(in.rewards.begin(), in.rewards.end());
  if (in.token_rewards.empty()) return s;
  for (int64_t b = 0; b < in.B; ++b) {
    double sum = 0;
    for (int64_t t = 0; t < in.T; ++t) sum += in.token_rewards[in.at(b, t)];
    s[static_cast<size_t>(b)] = sum;
  }
  return s;
}

void grpo_verl(const AdvInput& in, double eps, AdvOutput& out) {
  const auto s = sequence_scores(in);
  std::vector<double> means, stds;
  for (const auto& g : group_rows(in.group, in.B)) {
    std::vector<double> v;
    for (int64_t b : g) v.push_back(s[static_cast<size_t>(b)]);
    double mu = 0, sd = 1;
    if (v.size() > 1) mu = mean(v), sd = std_unbiased(v);
    means.push_back(mu), stds.push_back(sd);
    for (size_t k = 0; k < g.size(); ++k) broadcast(in, g[k], (v[k] - mu) / (sd + eps), out);
  }
  add_stats(out.metrics, "group_advantages/reward_mean", means);
  add_stats(out.metrics, "group_advantages/reward_std", stds);
}

}  // namespace adv_detail

namespace {

using namespace adv_detail;

class GrpoVerlAdv : public AdvantageFn {
 public:
  explicit GrpoVerlAdv(const Args& a) : eps_(a.f64("epsilon")) {
    if (!(eps_ >= 0)) throw ConfigError("algorithm", strcat(a.where(), ": epsilon must be >= 0, got ", eps_));
  }
  bool trainer_side() const override { return true; }
  AdvOutput compute(const AdvInput& in, Rng&) const override {
    in.validate("advantage_fn grpo_verl", 0);
    AdvOutput out = make_output(in);
    grpo_verl(in, eps_, out);
    finish_rows(out);
    return out;
  }

 private:
  double eps_;
};

// opmd_verl and asymre_verl: a = s − b with a per-group baseline.
class BaselineVerlAdv : public AdvantageFn {
 public:
  BaselineVerlAdv(bool opmd, const Args& a) : opmd_(opmd) {
    if (opmd) {
      logavgexp_ = a.choice("opmd_baseline", {"mean", "logavgexp"}) == "logavgexp";
      tau_ = a.f64("tau");
      if (!(tau_ > 0)) throw ConfigError("algorithm", strcat(a.where(), ": tau must be > 0, got ", tau_));
    } else {
      shift_ = a.f64("baseline_shift");
      if (!std::isfinite(shift_))
        throw ConfigError("algorithm", strcat(a.where(), ": baseline_shift must be finite, got ", shift_));
    }
  }
  bool trainer_side() const override { return true; }
  AdvOutput compute(const AdvInput& in, Rng&) const override {
    in.validate(opmd_ ? "advantage_fn opmd_verl" : "advantage_fn asymre_verl", 0);
    AdvOutput out = make_output(in);
    const auto s = sequence_scores(in);
    std::vector<double> baselines;
    for (const auto& g : group_rows(in.group, in.B)) {
      std::vector<double> v;
      for (int64_t b : g) v.push_back(s[static_cast<size_t>(b)]);
      double base = 0;
      if (v.size() > 1) base = !opmd_ ? mean(v) + shift_ : logavgexp_ ? log_mean_exp(v, tau_) : mean(v);
      baselines.push_back(base);
      for (size_t k = 0; k < g.size(); ++k) broadcast(in, g[k], v[k] - base, out);
    }
    add_stats(out.metrics, "group_advantages/group_baseline", baselines);
    finish_rows(out);
    return out;
  }

 private:
  bool opmd_, logavgexp_ = false;
  double tau_ = 1.0, shift_ = -0.1;
};

// Trinity-RFT registers remax but never produces its `reward_baselines`; here the baseline comes
// from each experience's info.reward_baseline (a workflow that also scores the greedy rollout sets
// it), and its absence is a ValueError naming that key.
class RemaxAdv : public AdvantageFn {
 public:
  explicit RemaxAdv(const Args&) {}
  unsigned needs() const override { return kAdvNeedBaseline; }
  bool trainer_side() const override { return true; }
  AdvOutput compute(const AdvInput& in, Rng&) const override {
    if (in.reward_baseline.empty() && in.B > 0)
      throw ValueError("algorithm",
                       "advantage_fn remax: needs a reward baseline for every experience (info.reward_baseline: "
                       "the reward of the greedy rollout of the same prompt, ReMax arXiv 2310.10505); Trinity-RFT "
                       "never produces one, so the workflow must set it");
    in.validate("advantage_fn remax", needs());
    AdvOutput out = make_output(in);
    const auto r = token_rewards(in);
    std::vector<double> baselines(in.reward_baseline.begin(), in.reward_baseline.end());
    for (int64_t b = 0; b < in.B; ++b) {
      const double base = baselines[static_cast<size_t>(b)];
      if (!std::isfinite(base))
        throw ValueError("algorithm",
                         strcat("advantage_fn remax: experience ", b, " has a non-finite reward_baseline ", base));
      double ret = 0;
      for (int64_t t = in.T - 1; t >= 0; --t) {
        const size_t i = in.at(b, t);
        ret += r[i] * in.mask[i];
        // Trinity leaves the reversed cumsum on masked positions; trinity zeroes them (unused by the loss).
        if (in.mask[i] != 0) {
          out.returns[i] = static_cast<float>(ret);
          out.advantages[i] = static_cast<float>(ret - base * in.mask[i]);
        }
      }
      out.keep[static_cast<size_t>(b)] = 1;
    }
    add_stats(out.metrics, "reward_baseline", baselines);
    finish_rows(out);
    return out;
  }
};

}  // namespace

void add_verl_advantages(std::vector<RegistryEntry<AdvantageFn>>& out) {
  out.push_back({"grpo_verl",
                 "(s − mean_uid s)/(std_uid s + ε), s = Σ token rewards; trainer-side GRPO (arXiv 2402.03300)",
                 {{"epsilon", 1e-6, "ε in (s − mean)/(std + ε)"}},
                 [](const Args& a) { return std::make_unique<GrpoVerlAdv>(a); }});
  out.push_back({"opmd_verl",
                 "s − mean_uid s, or s − τ·log-mean-exp(s/τ); trainer-side opmd (arXiv 2505.17826)",
                 {{"opmd_baseline", "mean", "mean | logavgexp"}, {"tau", 1.0, "temperature of logavgexp"}},
                 [](const Args& a) { return std::make_unique<BaselineVerlAdv>(true, a); }});
  out.push_back({"asymre_verl",
                 "s − (mean_uid s + shift); trainer-side asymre (arXiv 2506.20520)",
                 {{"baseline_shift", -0.1, "shift added to the group mean baseline"}},
                 [](const Args& a) { return std::make_unique<BaselineVerlAdv>(false, a); }});
  out.push_back(
      {"remax", "Σ_{k≥t} r_k·m_k − b·m_t, b = info.reward_baseline (ReMax, arXiv 2310.10505)", {}, [](const Args& a) {
         return std::make_unique<RemaxAdv>(a);
       }});
}

}  // namespace trinity::algo
