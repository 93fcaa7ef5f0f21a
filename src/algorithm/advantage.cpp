// Advantage registry, AdvInput validation and the helpers shared by the advantage files.
#include "algorithm/advantage.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace trinity::algo {

int64_t AdvInput::length(int64_t b) const {
  if (!lengths.empty()) return lengths[static_cast<size_t>(b)];
  for (int64_t t = T - 1; t >= 0; --t)
    if (mask[at(b, t)] != 0) return t + 1;
  return 0;
}

void AdvInput::validate(const char* who, unsigned needs) const {
  if (B <= 0 || T <= 0)
    throw ValueError("algorithm", strcat(who, ": empty batch (B=", B, ", T=", T,
                                         "); advantages need at least one experience and one token"));
  const size_t n = static_cast<size_t>(B * T), nb = static_cast<size_t>(B);
  auto chk = [&](const char* name, size_t got, size_t want, bool required) {
    if (got == want) return;
    if (got == 0 && required)
      throw ValueError("algorithm", strcat(who, ": needs '", name, "' for every experience"));
    if (got != 0)
      throw ShapeError("algorithm", strcat(who, ": '", name, "' has ", got, " values, expected ", want));
  };
  chk("reward", rewards.size(), nb, true);
  chk("action_mask", mask.size(), n, true);
  chk("token_rewards", token_rewards.size(), n, false);
  chk("lengths", lengths.size(), nb, needs & kAdvNeedLengths);
  chk("logprobs (rollout)", old_logprob.size(), n, needs & kAdvNeedOldLogprob);
  chk("ref_logprobs", ref_logprob.size(), n, false);
  chk("teacher_logprobs", teacher_logprob.size(), n, needs & kAdvNeedTeacher);
  chk("values", values.size(), n, needs & kAdvNeedValues);
  chk("group", group.size(), nb, false);
  chk("run", run.size(), nb, needs & kAdvNeedRun);
  chk("run_step", run_step.size(), nb, false);
  chk("anchor", anchor.size(), nb, needs & kAdvNeedAnchor);
  chk("entropy", entropy.size(), n, needs & kAdvNeedEntropy);
  chk("nec", nec.size(), n, needs & kAdvNeedNec);
  chk("reward_baseline", reward_baseline.size(), nb, needs & kAdvNeedBaseline);
  for (size_t b = 0; b < nb; ++b) {
    if (!std::isfinite(rewards[b]))
      throw ValueError("algorithm", strcat(who, ": experience ", b, " has a non-finite reward ", rewards[b]));
    if (!lengths.empty() && (lengths[b] < 0 || lengths[b] > T))
      throw ShapeError("algorithm", strcat(who, ": experience ", b, " has length ", lengths[b], " outside [0, ", T, "]"));
  }
}

namespace adv_detail {

std::vector<std::vector<int64_t>> group_rows(std::span<const std::string> keys, int64_t B) {
  std::vector<std::vector<int64_t>> out;
  if (keys.empty()) {
    for (int64_t b = 0; b < B; ++b) out.push_back({b});
    return out;
  }
  std::unordered_map<std::string, size_t> idx;
  for (int64_t b = 0; b < B; ++b) {
    auto [it, fresh] = idx.try_emplace(keys[static_cast<size_t>(b)], out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(b);
  }
  return out;
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double std_unbiased(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mu = mean(v);
  double s = 0;
  for (double x : v) s += (x - mu) * (x - mu);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

double std_population(const std::vector<double>& v) {
  if (v.empty()) return 0;
  const double mu = mean(v);
  double s = 0;
  for (double x : v) s += (x - mu) * (x - mu);
  return std::sqrt(s / static_cast<double>(v.size()));
}

void broadcast(const AdvInput& in, int64_t b, double a, AdvOutput& out) {
  for (int64_t t = 0; t < in.T; ++t) {
    const size_t i = in.at(b, t);
    out.advantages[i] = out.returns[i] = in.mask[i] != 0 ? static_cast<float>(a * in.mask[i]) : 0.0f;
  }
  out.keep[static_cast<size_t>(b)] = 1;
}

AdvOutput make_output(const AdvInput& in) {
  AdvOutput o;
  o.advantages.assign(static_cast<size_t>(in.B * in.T), 0.0f);
  o.returns.assign(static_cast<size_t>(in.B * in.T), 0.0f);
  o.keep.assign(static_cast<size_t>(in.B), 0);
  return o;
}

void finish_rows(AdvOutput& out) {
  if (!out.rows.empty()) return;
  for (size_t b = 0; b < out.keep.size(); ++b)
    if (out.keep[b]) out.rows.push_back(static_cast<int64_t>(b));
}

std::vector<double> token_rewards(const AdvInput& in) {
  std::vector<double> r(static_cast<size_t>(in.B * in.T), 0.0);
  if (!in.token_rewards.empty()) {
    for (size_t i = 0; i < r.size(); ++i) r[i] = in.token_rewards[i];
    return r;
  }
  for (int64_t b = 0; b < in.B; ++b) {
    const int64_t len = in.length(b);
    if (len > 0) r[in.at(b, len - 1)] = in.rewards[static_cast<size_t>(b)];
  }
  return r;
}

void add_stats(Metrics& m, const std::string& name, const std::vector<double>& v) {
  if (v.empty()) return;
  m.set(name + "/mean", mean(v));
  m.set(name + "/max", *std::max_element(v.begin(), v.end()));
  m.set(name + "/min", *std::min_element(v.begin(), v.end()));
}

double log_mean_exp(const std::vector<double>& v, double tau) {
  if (v.empty()) return 0;
  const double mx = *std::max_element(v.begin(), v.end());
  double s = 0;
  for (double x : v) s += std::exp((x - mx) / tau);
  return tau * (mx / tau + std::log(s) - std::log(static_cast<double>(v.size())));
}

}  // namespace adv_detail

const Registry<AdvantageFn>& advantage_registry() {
  static const Registry<AdvantageFn> reg = [] {
    std::vector<RegistryEntry<AdvantageFn>> e;
    add_group_advantages(e);
    add_multistep_advantages(e);
    add_token_advantages(e);
    add_verl_advantages(e);
    add_entropy_advantages(e);
    return Registry<AdvantageFn>("advantage_fn", std::move(e));
  }();
  return reg;
}

}  // namespace trinity::algo
