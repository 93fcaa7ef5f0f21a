// Multi-step (agentic) advantages over runs of step experiences:
//   step_wise_grpo  GRPO over each run's LAST-step reward, broadcast to every step of the run
//                   (optionally / number of steps); Trinity's multi_step_grpo.
//   gigpo           Group-in-Group Policy Optimization (Feng et al., arXiv 2505.10978):
//                   A = A_E + ω·A_S, A_E = (R(τ) − mean_group R)/F over the task's runs with
//                   R(τ) = Σ_t r_t, A_S = (R_t − mean)/F over steps sharing an anchor state across the
//                   group, R_t = Σ_{k≥t} γ^{k−t} r_k; F = std + ε (norm "std"), 1 ("mean") or
//                   1 + ε (fnorm "none", newer Trinity-RFT);
//                   singleton step groups give A_S = 0.
// Runs are keyed by `run` (rid); steps within a run are ordered by `run_step`, else list order.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "algorithm/advantage.h"

namespace trinity::algo {
namespace {

using namespace adv_detail;

// Runs of one task group: each run's rows ordered by step.
std::vector<std::vector<int64_t>> runs_of(const AdvInput& in, const std::vector<int64_t>& group) {
  std::vector<std::string> keys;
  for (int64_t b : group)
    keys.push_back(in.run.empty() ? std::to_string(b) : in.run[static_cast<size_t>(b)]);
  auto local = group_rows(keys, static_cast<int64_t>(keys.size()));
  std::vector<std::vector<int64_t>> runs;
  for (auto& r : local) {
    std::vector<int64_t> rows;
    for (int64_t k : r) rows.push_back(group[static_cast<size_t>(k)]);
    if (!in.run_step.empty())
      std::stable_sort(rows.begin(), rows.end(), [&](int64_t x, int64_t y) {
        return in.run_step[static_cast<size_t>(x)] < in.run_step[static_cast<size_t>(y)];
      });
    runs.push_back(std::move(rows));
  }
  return runs;
}

class StepWiseGrpoAdv : public AdvantageFn {
 public:
  explicit StepWiseGrpoAdv(const Args& a)
      : eps_(a.f64("epsilon")), step_norm_(a.boolean("enable_step_norm")),
        batch_std_(a.choice("std_cal_level", {"group", "batch"}) == "batch"), thr_(a.opt_f64("std_threshold")) {}
  AdvOutput compute(const AdvInput& in, Rng&) const override {
    in.validate("advantage_fn step_wise_grpo", 0);
    AdvOutput out = make_output(in);
    const auto groups = group_rows(in.group, in.B);
    std::vector<std::vector<std::vector<int64_t>>> all_runs;
    std::vector<double> all_last;
    for (const auto& g : groups) {
      all_runs.push_back(runs_of(in, g));
      for (const auto& run : all_runs.back()) all_last.push_back(in.rewards[static_cast<size_t>(run.back())]);
    }
    const double batch_sd = all_last.size() > 1 ? std_unbiased(all_last) : 1.0;
    double skipped = 0, filtered = 0;
    for (const auto& runs : all_runs) {
      std::vector<double> last;
      for (const auto& run : runs) last.push_back(in.rewards[static_cast<size_t>(run.back())]);
      double mu = 0, sd = 1;
      if (runs.size() > 1) mu = mean(last), sd = std_unbiased(last);
      if (thr_ && (runs.size() == 1 || sd <= *thr_)) {
        skipped += 1;
        for (const auto& run : runs) filtered += static_cast<double>(run.size());
        continue;
      }
      if (batch_std_ && runs.size() > 1) sd = batch_sd;
      for (size_t k = 0; k < runs.size(); ++k) {
        double a = (last[k] - mu) / (sd + eps_);
        if (step_norm_) a /= static_cast<double>(runs[k].size());
        for (int64_t b : runs[k]) broadcast(in, b, a, out);
      }
    }
    finish_rows(out);
    out.metrics.set("experience_count", static_cast<double>(out.rows.size()));
    out.metrics.set("filtered_count", filtered);
    out.metrics.set("skipped_group_ratio", safe_ratio(skipped, static_cast<double>(groups.size())));
    return out;
  }

 private:
  static double safe_ratio(double a, double b) { return b > 0 ? a / b : 0.0; }
  double eps_;
  bool step_norm_, batch_std_;
  std::optional<double> thr_;
};

// Newer Trinity-RFT names: `omega` = step_advantage_weight; `fnorm` std | none, where none divides by
// 1 + ε (its _normalize keeps ε), unlike norm: mean, which divides by 1.
enum class GigpoNorm { kStd, kMean, kNone };

// Whether one of two synonymous args is set (null = unset); both set is an error naming them.
bool one_of(const Args& a, const char* name, const char* alias) {
  const bool x = a.has_value(name), y = a.has_value(alias);
  if (x && y)
    throw ConfigError("algorithm",
                      strcat(a.where(), ": '", alias, "' is the newer name of '", name, "'; give only one of them"));
  return x || y;
}

double gigpo_omega(const Args& a) {
  if (!one_of(a, "step_advantage_weight", "omega")) return 1.0;
  return a.has_value("omega") ? a.f64("omega") : a.f64("step_advantage_weight");
}

GigpoNorm gigpo_norm(const Args& a) {
  if (!one_of(a, "norm", "fnorm")) return GigpoNorm::kStd;
  if (a.has_value("fnorm")) return a.choice("fnorm", {"std", "none"}) == "std" ? GigpoNorm::kStd : GigpoNorm::kNone;
  return a.choice("norm", {"std", "mean"}) == "std" ? GigpoNorm::kStd : GigpoNorm::kMean;
}

class GigpoAdv : public AdvantageFn {
 public:
  explicit GigpoAdv(const Args& a)
      : gamma_(a.f64("gamma")),
        omega_(gigpo_omega(a)),
        episode_w_(a.f64("episode_advantage_weight")),
        eps_(a.f64("epsilon")),
        norm_(gigpo_norm(a)) {
    if (gamma_ < 0 || gamma_ > 1)
      throw ConfigError("algorithm", strcat(a.where(), ": gamma must be in [0, 1], got ", gamma_));
  }
  unsigned needs() const override { return kAdvNeedRun | kAdvNeedAnchor; }
  AdvOutput compute(const AdvInput& in, Rng&) const override {
    in.validate("advantage_fn gigpo", needs());
    AdvOutput out = make_output(in);
    std::vector<double> a_episode(static_cast<size_t>(in.B), 0.0), a_step(static_cast<size_t>(in.B), 0.0);
    std::vector<double> step_return(static_cast<size_t>(in.B), 0.0);
    double n_step_groups = 0, n_grouped_steps = 0;
    for (const auto& g : group_rows(in.group, in.B)) {
      const auto runs = runs_of(in, g);
      // Episode level.
      std::vector<double> R;
      for (const auto& run : runs) {
        double s = 0;
        for (int64_t b : run) s += in.rewards[static_cast<size_t>(b)];
        R.push_back(s);
      }
      double mu = 0, sd = 1;
      if (runs.size() > 1) mu = mean(R), sd = norm_ == GigpoNorm::kStd ? std_unbiased(R) : 1.0;
      for (size_t k = 0; k < runs.size(); ++k) {
        const double ae = (R[k] - mu) / denom(sd);
        double ret = 0;
        for (size_t j = runs[k].size(); j-- > 0;) {
          const int64_t b = runs[k][j];
          ret = in.rewards[static_cast<size_t>(b)] + gamma_ * ret;
          step_return[static_cast<size_t>(b)] = ret;
          a_episode[static_cast<size_t>(b)] = ae;
        }
      }
      // Step level: anchor groups across all runs of this task.
      std::map<std::string, std::vector<int64_t>> anchors;
      for (int64_t b : g) anchors[in.anchor[static_cast<size_t>(b)]].push_back(b);
      for (const auto& [key, rows] : anchors) {
        if (rows.size() < 2) continue;
        n_step_groups += 1, n_grouped_steps += static_cast<double>(rows.size());
        std::vector<double> v;
        for (int64_t b : rows) v.push_back(step_return[static_cast<size_t>(b)]);
        const double m = mean(v), s = denom(norm_ == GigpoNorm::kStd ? std_unbiased(v) : 1.0);
        for (size_t j = 0; j < rows.size(); ++j) a_step[static_cast<size_t>(rows[j])] = (v[j] - m) / s;
      }
    }
    for (int64_t b = 0; b < in.B; ++b)
      broadcast(in, b, episode_w_ * a_episode[static_cast<size_t>(b)] + omega_ * a_step[static_cast<size_t>(b)], out);
    finish_rows(out);
    out.metrics.set("gigpo/step_group_count", n_step_groups);
    out.metrics.set("gigpo/grouped_step_ratio", n_grouped_steps / static_cast<double>(in.B));
    return out;
  }

 private:
  double denom(double sd) const { return norm_ == GigpoNorm::kMean ? 1.0 : sd + eps_; }
  double gamma_, omega_, episode_w_, eps_;
  GigpoNorm norm_;
};

}  // namespace

void add_multistep_advantages(std::vector<RegistryEntry<AdvantageFn>>& out) {
  out.push_back({"step_wise_grpo", "GRPO over each run's last-step reward, broadcast to all its steps",
                 {{"epsilon", 1e-6, "ε"},
                  {"enable_step_norm", false, "divide by the number of steps in the run"},
                  {"std_cal_level", "group", "group | batch"},
                  {"std_threshold", nullptr, "skip groups with std ≤ this or a single run"}},
                 [](const Args& a) { return std::make_unique<StepWiseGrpoAdv>(a); }});
  out.push_back({"gigpo",
                 "A_E(episode) + ω·A_S(anchor-state step group) (arXiv 2505.10978)",
                 {{"gamma", 0.95, "discount of step returns"},
                  {"step_advantage_weight", nullptr, "ω: weight of the step-level advantage (null: 1.0)"},
                  {"omega", nullptr, "newer Trinity-RFT name of step_advantage_weight"},
                  {"episode_advantage_weight", 1.0, "weight of the episode-level advantage"},
                  {"norm", nullptr, "std | mean: divide by std + ε, or only subtract the mean (null: std)"},
                  {"fnorm", nullptr, "newer Trinity-RFT form of norm: std | none (none divides by 1 + ε)"},
                  {"epsilon", 1e-6, "ε"}},
                 [](const Args& a) { return std::make_unique<GigpoAdv>(a); }});
}

}  // namespace trinity::algo
