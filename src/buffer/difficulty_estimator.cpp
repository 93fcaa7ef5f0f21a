// BOTS estimator and selection (see difficulty_estimator.h).
#include "buffer/difficulty_estimator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "buffer/json_util.h"
#include "core/error.h"
#include "core/names.h"
#include "core/rng.h"

namespace trinity::buffer {

using detail::json;

namespace {

// Gamma(a, 1) by Marsaglia-Tsang (a >= 1), with the a < 1 boost Gamma(a+1)·U^(1/a).
double gamma_draw(Rng& rng, double a) {
  if (a < 1.0) {
    double u = rng.uniform();
    while (u <= 0.0) u = rng.uniform();
    return gamma_draw(rng, a + 1.0) * std::pow(u, 1.0 / a);
  }
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = rng.uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double beta_draw(Rng& rng, double a, double b) {
  const double x = gamma_draw(rng, a), y = gamma_draw(rng, b);
  return x + y > 0 ? x / (x + y) : 0.5;
}

std::vector<double> json_doubles(const json& j, const std::string& key, size_t n, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_array() || j.at(key).size() != n)
    throw ValueError("buffer", strcat(where, ": the difficulty_based state needs '", key, "' with ", n,
                                      " numbers (one per task); the taskset changed since the state was saved?"));
  std::vector<double> v;
  v.reserve(n);
  for (const auto& x : j.at(key)) v.push_back(x.get<double>());
  return v;
}

}  // namespace

DifficultyParams DifficultyParams::from_kwargs(const std::string& kwargs, const std::string& taskset) {
  const json k =
      detail::parse_json(kwargs.empty() ? "{}" : kwargs, strcat("taskset '", taskset, "' data_selector.kwargs"));
  const std::vector<std::string> known = {"m", "lamb", "rho", "adaptive_rho", "target_reward", "tau", "do_sample"};
  DifficultyParams p;
  if (k.is_null()) return p;
  if (!k.is_object())
    throw ConfigError("buffer",
                      strcat("taskset '", taskset, "': data_selector.kwargs must be a mapping, got ", k.dump()));
  for (const auto& [key, v] : k.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw ConfigError(
          "buffer", strcat("taskset '", taskset, "': data_selector.kwargs has unknown key '", key, "'",
                           did_you_mean_suffix(key, known), " for difficulty_based; accepted: ", join_names(known)));
    const bool is_flag = key == "adaptive_rho" || key == "do_sample";
    if (is_flag ? !v.is_boolean() : !v.is_number())
      throw ConfigError("buffer", strcat("taskset '", taskset, "': data_selector.kwargs.", key, " must be a ",
                                         is_flag ? "boolean" : "number", ", got ", v.dump()));
  }
  p.m = k.value("m", p.m);
  p.lamb = k.value("lamb", p.lamb);
  p.rho = k.value("rho", p.rho);
  p.adaptive_rho = k.value("adaptive_rho", p.adaptive_rho);
  p.target_reward = k.value("target_reward", p.target_reward);
  p.tau = k.value("tau", p.tau);
  p.do_sample = k.value("do_sample", p.do_sample);
  auto bad = [&](const char* key, double v, const char* want) {
    throw ConfigError("buffer",
                      strcat("taskset '", taskset, "': data_selector.kwargs.", key, " must be ", want, ", got ", v));
  };
  if (!(p.m > 0)) bad("m", p.m, "> 0");
  if (!(p.lamb >= 0 && p.lamb <= 1)) bad("lamb", p.lamb, "in [0, 1]");
  if (!(p.rho >= 0 && p.rho <= 1)) bad("rho", p.rho, "in [0, 1]");
  if (!(p.tau >= 0)) bad("tau", p.tau, ">= 0");
  if (!std::isfinite(p.target_reward)) bad("target_reward", p.target_reward, "a finite number");
  return p;
}

DifficultyEstimator::DifficultyEstimator(std::vector<std::array<double, 2>> features, DifficultyParams p)
    : f_(std::move(features)), p_(p), alpha_(f_.size(), 1.0), beta_(f_.size(), 1.0) {}

void DifficultyEstimator::feedback(const std::vector<int64_t>& rows, const std::vector<double>& pr) {
  TRINITY_ASSERT(rows.size() == pr.size(), "feedback rows and pass rates differ in length");
  if (rows.empty()) return;
  const size_t n = f_.size();
  for (int64_t r : rows)
    if (r < 0 || static_cast<size_t>(r) >= n)
      throw ValueError("buffer", strcat("difficulty_based feedback for row ", r, " of a taskset of ", n, " rows"));
  double mean_pr = 0, a0 = 0, a1 = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    mean_pr += pr[i];
    a0 += f_[static_cast<size_t>(rows[i])][0];
    a1 += f_[static_cast<size_t>(rows[i])][1];
  }
  const double cnt = static_cast<double>(rows.size());
  mean_pr /= cnt, a0 /= cnt, a1 /= cnt;
  const double est = (mean_pr - a0) / (a1 - a0 + 1e-6);
  cap_ = cap_ ? 0.9 * *cap_ + 0.1 * est : est;
  std::vector<double> p_tilde(n), s_bar(n, 0.0), f_bar(n, 0.0);
  for (size_t j = 0; j < n; ++j) p_tilde[j] = std::clamp((f_[j][1] - f_[j][0]) * *cap_ + f_[j][0], 0.0, 1.0);
  if (p_.adaptive_rho) {
    double mae = 0;
    for (size_t i = 0; i < rows.size(); ++i) mae += std::abs(p_tilde[static_cast<size_t>(rows[i])] - pr[i]);
    if (mae / cnt >= 0.25) p_.rho *= 0.5;
  }
  // Later entries win for a row listed twice, as numpy's fancy assignment does.
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto r = static_cast<size_t>(rows[i]);
    p_tilde[r] = pr[i];
    s_bar[r] = pr[i] * p_.m;
    f_bar[r] = (1 - pr[i]) * p_.m;
  }
  for (size_t j = 0; j < n; ++j) {
    alpha_[j] = (1 - p_.lamb) * alpha_[j] + p_.lamb + (1 - p_.rho) * s_bar[j] + p_.rho * p_tilde[j] * p_.m;
    beta_[j] = (1 - p_.lamb) * beta_[j] + p_.lamb + (1 - p_.rho) * f_bar[j] + p_.rho * (1 - p_tilde[j]) * p_.m;
  }
}

std::vector<double> DifficultyEstimator::predicted() const {
  std::vector<double> p(alpha_.size());
  for (size_t j = 0; j < p.size(); ++j) p[j] = alpha_[j] / (alpha_[j] + beta_[j]);
  return p;
}

std::vector<double> DifficultyEstimator::scores(uint64_t seed, int64_t current_index) const {
  const size_t n = alpha_.size();
  Rng rng(seed + static_cast<uint64_t>(current_index));
  std::vector<double> score(n);
  for (size_t j = 0; j < n; ++j) {
    const double p = p_.do_sample ? beta_draw(rng, alpha_[j], beta_[j]) : alpha_[j] / (alpha_[j] + beta_[j]);
    score[j] = -std::abs(p_.target_reward - p);
  }
  return score;
}

std::vector<int64_t> DifficultyEstimator::select(size_t k, uint64_t seed, int64_t current_index) const {
  const size_t n = alpha_.size();
  TRINITY_ASSERT(k <= n, "difficulty_based selection of more rows than the taskset has");
  const std::vector<double> score = scores(seed, current_index);
  std::vector<double> key(n);
  if (p_.tau == 0) {
    key = score;
  } else {
    // Sampling k without replacement from softmax(score/τ) equals taking the top k of
    // score/τ + Gumbel noise (the Gumbel-top-k trick).
    Rng g(seed + static_cast<uint64_t>(current_index) + 0x5DEECE66DULL);
    for (size_t j = 0; j < n; ++j) {
      double u = g.uniform();
      while (u <= 0.0) u = g.uniform();
      key[j] = score[j] / p_.tau - std::log(-std::log(u));
    }
  }
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), [&](int64_t a, int64_t b) {
    const double ka = key[static_cast<size_t>(a)], kb = key[static_cast<size_t>(b)];
    return ka != kb ? ka > kb : a < b;
  });
  idx.resize(k);
  return idx;
}

std::string DifficultyEstimator::state() const {
  json j = {{"alphas", alpha_}, {"betas", beta_}, {"rho", p_.rho}};
  j["cap"] = cap_ ? json(*cap_) : json(nullptr);
  return j.dump();
}

void DifficultyEstimator::load_state(const std::string& state, const std::string& where) {
  const json j = detail::parse_json(state, where);
  const size_t n = alpha_.size();
  alpha_ = json_doubles(j, "alphas", n, where);
  beta_ = json_doubles(j, "betas", n, where);
  if (j.contains("rho") && j.at("rho").is_number()) p_.rho = j.at("rho").get<double>();
  cap_.reset();
  if (j.contains("cap") && j.at("cap").is_number()) cap_ = j.at("cap").get<double>();
}

}  // namespace trinity::buffer
