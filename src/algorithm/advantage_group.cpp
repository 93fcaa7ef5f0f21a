// Group advantages from one scalar reward per experience, grouped by task (tid):
//   grpo   a = (r − mean)/(std + ε)          (DeepSeekMath, arXiv 2402.03300), with std_threshold
//          filtering, POLARIS duplication, batch-level std and rank penalty (arXiv 2506.02355)
//   dapo   grpo on r + overlong penalty, optional dynamic filtering (arXiv 2503.14476)
//   reinforce a = r;  rloo a = n/(n−1)·(r − mean)  (arXiv 2402.14740)
//   opmd   a = r − mean  or  r − τ·log-mean-exp(r/τ);  asymre a = r − (mean + shift) (arXiv 2506.20520)
//   rec    a = r − mean(kept) [/ (std_pop + ε)], drop=balance zeroes surplus negatives
// Unbiased std unless noted; a group of one gets mean 0 and std 1 (a = r).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "algorithm/advantage.h"

namespace trinity::algo {
namespace {

using namespace adv_detail;

struct GrpoParams {
  double eps = 1e-6;
  std::optional<double> std_threshold;
  bool duplicate = false;
  std::optional<double> rank_penalty;
  bool batch_std = false;
};

GrpoParams grpo_params(const Args& a) {
  GrpoParams p;
  p.eps = a.f64("epsilon");
  p.std_threshold = a.opt_f64("std_threshold");
  p.duplicate = a.boolean("duplicate_experiences");
  p.rank_penalty = a.opt_f64("rank_penalty");
  p.batch_std = a.choice("std_cal_level", {"group", "batch"}) == "batch";
  if (p.duplicate && !p.std_threshold)
    throw ConfigError("algorithm", strcat(a.where(), ": duplicate_experiences needs std_threshold"));
  return p;
}

// Masked mean of the rollout logprobs of row b.
double mean_logprob(const AdvInput& in, int64_t b) {
  double s = 0, n = 0;
  for (int64_t t = 0; t < in.T; ++t) s += in.mask[in.at(b, t)] * in.old_logprob[in.at(b, t)], n += in.mask[in.at(b, t)];
  return s / (n + 1e-8);
}

AdvOutput grpo(const AdvInput& in, std::vector<double> r, const GrpoParams& p, Rng& rng) {
  AdvOutput out = make_output(in);
  const auto groups = group_rows(in.group, in.B);
  if (p.rank_penalty) {
    // Rank of each sample's mean logprob inside its group (stable), scaled to [0, 1).
    for (const auto& g : groups) {
      std::vector<int64_t> order(g.size());
      std::iota(order.begin(), order.end(), 0);
      std::vector<double> lp(g.size());
      for (size_t k = 0; k < g.size(); ++k) lp[k] = mean_logprob(in, g[k]);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return lp[x] < lp[y]; });
      for (size_t pos = 0; pos < order.size(); ++pos) {
        const double rank = static_cast<double>(pos) / static_cast<double>(g.size());
        r[static_cast<size_t>(g[static_cast<size_t>(order[pos])])] *= 1 - rank * *p.rank_penalty;
      }
    }
  }
  double batch_sd = 1.0;
  if (p.batch_std && r.size() > 1) batch_sd = std_unbiased(r);
  std::vector<double> means, stds;
  std::vector<size_t> survivors, dropped;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    std::vector<double> v;
    for (int64_t b : g) v.push_back(r[static_cast<size_t>(b)]);
    double mu = 0, sd = 1;
    bool drop = false;
    if (g.size() == 1) {
      drop = p.std_threshold.has_value();
    } else {
      mu = mean(v), sd = std_unbiased(v);
      drop = p.std_threshold && sd <= *p.std_threshold;
      if (p.batch_std) sd = batch_sd;
    }
    means.push_back(mu), stds.push_back(sd);
    if (drop) {
      dropped.push_back(gi);
      continue;
    }
    survivors.push_back(gi);
    for (size_t k = 0; k < g.size(); ++k) broadcast(in, g[k], (v[k] - mu) / (sd + p.eps), out);
  }
  add_stats(out.metrics, "group_advantages/reward_mean", means);
  add_stats(out.metrics, "group_advantages/reward_std", stds);
  double filtered = 0;
  for (size_t gi : dropped) filtered += static_cast<double>(groups[gi].size());
  out.metrics.set("filtered_count", filtered);
  finish_rows(out);
  if (p.duplicate && !dropped.empty() && !survivors.empty()) {
    // POLARIS-style: replace each dropped group by a copy of a random surviving group.
    for (size_t k = 0; k < dropped.size(); ++k) {
      const auto& src = groups[survivors[rng.below(survivors.size())]];
      out.rows.insert(out.rows.end(), src.begin(), src.end());
    }
  }
  return out;
}

std::vector<double> scalar_rewards(const AdvInput& in) {
  return std::vector<double>(in.rewards.begin(), in.rewards.end());
}

class GrpoAdv : public AdvantageFn {
 public:
  explicit GrpoAdv(const Args& a) : p_(grpo_params(a)) {}
  unsigned needs() const override { return p_.rank_penalty ? kAdvNeedOldLogprob : 0u; }
  AdvOutput compute(const AdvInput& in, Rng& rng) const override {
    in.validate("advantage_fn grpo", needs());
    return grpo(in, scalar_rewards(in), p_, rng);
  }

 private:
  GrpoParams p_;
};

// DAPO overlong shaping: 0 if L ≤ Lmax − Lc; ((Lmax − Lc) − L)/Lc if L ≤ Lmax; −1 beyond; × factor.
double overlong_penalty(int64_t len, int64_t lmax, int64_t lcache, double factor) {
  const double expected = static_cast<double>(lmax - lcache), L = static_cast<double>(len);
  if (L <= expected) return 0;
  if (len <= lmax) return (expected - L) / static_cast<double>(lcache) * factor;
  return -factor;
}

class DapoAdv : public AdvantageFn {
 public:
  explicit DapoAdv(const Args& a) : p_(grpo_params(a)) {
    overlong_ = a.boolean("enable_overlong_penalty");
    overlong_filter_ = a.boolean("overlong_filtering");
    if (a.boolean("dynamic_filtering")) {
      if (p_.std_threshold && *p_.std_threshold != 0)
        throw ConfigError("algorithm", strcat(a.where(), ": dynamic_filtering sets std_threshold 0; do not set both"));
      p_.std_threshold = 0.0;
    }
    if (overlong_ || overlong_filter_) {
      if (!a.has_value("max_response_tokens"))
        throw ConfigError("algorithm",
                          strcat(a.where(), ": the overlong penalty needs max_response_tokens (the config layer "
                                            "fills it from model.max_response_tokens); or set "
                                            "enable_overlong_penalty: false"));
      lmax_ = a.i64("max_response_tokens"), lcache_ = a.i64("overlong_buffer_len");
      factor_ = a.f64("overlong_penalty_factor");
      if (lcache_ <= 0 || lcache_ > lmax_)
        throw ConfigError("algorithm", strcat(a.where(), ": need 0 < overlong_buffer_len <= max_response_tokens, got ",
                                              lcache_, " and ", lmax_));
    }
  }
  unsigned needs() const override { return p_.rank_penalty ? kAdvNeedOldLogprob : 0u; }
  AdvOutput compute(const AdvInput& in, Rng& rng) const override {
    in.validate("advantage_fn dapo", needs());
    auto r = scalar_rewards(in);
    std::vector<double> pen(r.size(), 0.0);
    double n_over = 0;
    if (overlong_)
      for (int64_t b = 0; b < in.B; ++b) {
        pen[static_cast<size_t>(b)] = overlong_penalty(in.length(b), lmax_, lcache_, factor_);
        r[static_cast<size_t>(b)] += pen[static_cast<size_t>(b)];
      }
    AdvOutput out = grpo(in, r, p_, rng);
    for (int64_t b = 0; b < in.B; ++b)
      if (in.length(b) >= lmax_ && (overlong_ || overlong_filter_)) n_over += 1;
    if (overlong_filter_) {
      // Truncated (overlong) samples leave the loss: zero advantage, dropped from the output rows.
      std::vector<int64_t> rows;
      for (int64_t b : out.rows)
        if (in.length(b) < lmax_) rows.push_back(b);
      for (int64_t b = 0; b < in.B; ++b)
        if (in.length(b) >= lmax_) {
          out.keep[static_cast<size_t>(b)] = 0;
          for (int64_t t = 0; t < in.T; ++t) out.advantages[in.at(b, t)] = out.returns[in.at(b, t)] = 0;
        }
      out.rows = rows;
    }
    if (overlong_) add_stats(out.metrics, "overlong_penalty", pen);
    out.metrics.set("overlong_count", n_over);
    return out;
  }

 private:
  GrpoParams p_;
  bool overlong_ = true, overlong_filter_ = false;
  int64_t lmax_ = 0, lcache_ = 0;
  double factor_ = 1.0;
};

// Simple group baselines: kind selects the formula.
enum class Simple { kReinforce, kRloo, kOpmd, kAsymre };

class SimpleGroupAdv : public AdvantageFn {
 public:
  SimpleGroupAdv(Simple k, const Args& a, bool trainer) : k_(k), trainer_(trainer) {
    if (k == Simple::kOpmd) {
      baseline_ = a.choice("opmd_baseline", {"mean", "logavgexp"});
      tau_ = a.f64("tau");
      if (tau_ <= 0) throw ConfigError("algorithm", strcat(a.where(), ": tau must be > 0, got ", tau_));
    }
    if (k == Simple::kAsymre) shift_ = a.f64("baseline_shift");
  }
  bool trainer_side() const override { return trainer_; }
  AdvOutput compute(const AdvInput& in, Rng&) const override {
    in.validate("advantage_fn", 0);
    AdvOutput out = make_output(in);
    std::vector<double> baselines;
    for (const auto& g : group_rows(in.group, in.B)) {
      std::vector<double> v;
      for (int64_t b : g) v.push_back(in.rewards[static_cast<size_t>(b)]);
      const double n = static_cast<double>(v.size()), mu = mean(v);
      double base = 0, scale = 1;
      switch (k_) {
        case Simple::kReinforce: base = 0; break;
        case Simple::kRloo:
          if (v.size() > 1) base = mu, scale = n / (n - 1);
          break;
        case Simple::kOpmd:
          if (v.size() > 1) {
            if (baseline_ == "mean") {
              base = mu;
            } else {
              base = log_mean_exp(v, tau_);
            }
          }
          break;
        case Simple::kAsymre:
          if (v.size() > 1) base = mu + shift_;
          break;
      }
      baselines.push_back(k_ == Simple::kReinforce ? mu : base);
      for (size_t j = 0; j < g.size(); ++j) broadcast(in, g[j], scale * (v[j] - base), out);
    }
    add_stats(out.metrics, k_ == Simple::kReinforce ? "group_advantages/reward_mean"
                                                    : "group_advantages/group_baseline",
              baselines);
    finish_rows(out);
    return out;
  }

 private:
  Simple k_;
  bool trainer_;
  std::string baseline_ = "mean";
  double tau_ = 1.0, shift_ = -0.1;
};

// rec: is_pos = r ≥ mean; drop=balance zeroes #neg − #pos random negatives; μ/σ (population) over
// the kept samples (μ = 0, σ = 1 when ≤ 1 kept); a = r − μ, or (r − μ)/(σ + ε) with std_normalize.
// A group of one is fine here (Trinity raises, [obs]).
class RecAdv : public AdvantageFn {
 public:
  explicit RecAdv(const Args& a)
      : eps_(a.f64("epsilon")), std_norm_(a.boolean("std_normalize")),
        balance_(a.has_value("drop") && a.choice("drop", {"balance"}) == "balance") {}
  AdvOutput compute(const AdvInput& in, Rng& rng) const override {
    in.validate("advantage_fn rec", 0);
    AdvOutput out = make_output(in);
    double dropped_total = 0;
    for (const auto& g : group_rows(in.group, in.B)) {
      std::vector<double> v;
      for (int64_t b : g) v.push_back(in.rewards[static_cast<size_t>(b)]);
      const double mu0 = mean(v);
      std::vector<uint8_t> kept(g.size(), 1);
      std::vector<size_t> neg;
      size_t npos = 0;
      for (size_t j = 0; j < v.size(); ++j) {
        if (v[j] >= mu0)
          ++npos;
        else
          neg.push_back(j);
      }
      if (balance_ && neg.size() > npos) {
        // Partial Fisher-Yates: choose #neg − #pos negatives uniformly to drop.
        const size_t k = neg.size() - npos;
        for (size_t j = 0; j < k; ++j) {
          const size_t pick = j + static_cast<size_t>(rng.below(neg.size() - j));
          std::swap(neg[j], neg[pick]);
          kept[neg[j]] = 0;
        }
        dropped_total += static_cast<double>(k);
      }
      std::vector<double> kv;
      for (size_t j = 0; j < v.size(); ++j)
        if (kept[j]) kv.push_back(v[j]);
      double mu = 0, sd = 1;
      if (kv.size() > 1) mu = mean(kv), sd = std_population(kv);
      for (size_t j = 0; j < g.size(); ++j) {
        const double a = kept[j] ? (std_norm_ ? (v[j] - mu) / (sd + eps_) : v[j] - mu) : 0.0;
        broadcast(in, g[j], a, out);
      }
    }
    out.metrics.set("rec/dropped_negatives", dropped_total);
    finish_rows(out);
    return out;
  }

 private:
  double eps_;
  bool std_norm_, balance_;
};

ArgSpec grpo_spec() {
  return {{"epsilon", 1e-6, "ε in (r − mean)/(std + ε)"},
          {"std_threshold", nullptr, "drop groups whose reward std ≤ this (and groups of one)"},
          {"duplicate_experiences", false, "replace dropped groups by copies of surviving ones (POLARIS)"},
          {"rank_penalty", nullptr, "ρ: r ← r·(1 − rank·ρ) by mean rollout logprob (arXiv 2506.02355)"},
          {"std_cal_level", "group", "group | batch: where the std comes from"}};
}

}  // namespace

void add_group_advantages(std::vector<RegistryEntry<AdvantageFn>>& out) {
  out.push_back({"grpo", "(r − mean_group)/(std_group + ε) (arXiv 2402.03300)", grpo_spec(),
                 [](const Args& a) { return std::make_unique<GrpoAdv>(a); }});
  ArgSpec dapo = grpo_spec();
  dapo.insert(dapo.end(),
              {{"enable_overlong_penalty", true, "add DAPO's soft overlong penalty to the reward"},
               {"max_response_tokens", nullptr, "L_max (the config layer fills model.max_response_tokens)"},
               {"overlong_buffer_len", 4096, "L_cache: penalty ramps over the last L_cache tokens"},
               {"overlong_penalty_factor", 1.0, "scale of the penalty"},
               {"dynamic_filtering", false, "drop zero-variance groups (std_threshold = 0)"},
               {"overlong_filtering", false, "drop samples of length ≥ max_response_tokens from the loss"}});
  out.push_back({"dapo", "grpo on r + overlong penalty, optional dynamic filtering (arXiv 2503.14476)", dapo,
                 [](const Args& a) { return std::make_unique<DapoAdv>(a); }});
  out.push_back({"reinforce", "a = r (no baseline)", {},
                 [](const Args& a) { return std::make_unique<SimpleGroupAdv>(Simple::kReinforce, a, false); }});
  out.push_back({"rloo", "n/(n−1)·(r − mean): leave-one-out baseline (arXiv 2402.14740)", {},
                 [](const Args& a) { return std::make_unique<SimpleGroupAdv>(Simple::kRloo, a, true); }});
  out.push_back({"opmd", "r − mean, or r − τ·log-mean-exp(r/τ) (arXiv 2505.17826)",
                 {{"opmd_baseline", "mean", "mean | logavgexp"}, {"tau", 1.0, "temperature of logavgexp"}},
                 [](const Args& a) { return std::make_unique<SimpleGroupAdv>(Simple::kOpmd, a, false); }});
  out.push_back({"asymre", "r − (mean + shift) (AsymRE, arXiv 2506.20520)",
                 {{"baseline_shift", -0.1, "shift added to the group mean baseline"}},
                 [](const Args& a) { return std::make_unique<SimpleGroupAdv>(Simple::kAsymre, a, false); }});
  out.push_back({"rec", "r − mean(kept) [/(std_pop + ε)], optional balanced dropping of negatives",
                 {{"epsilon", 1e-6, "ε"},
                  {"std_normalize", false, "divide by the population std"},
                  {"drop", nullptr, "null | balance"}},
                 [](const Args& a) { return std::make_unique<RecAdv>(a); }});
}

}  // namespace trinity::algo
