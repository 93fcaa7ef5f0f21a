// Metric aggregation helpers (see metrics_util.h for names and formulas).
#include "monitor/metrics_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/rng.h"

namespace trinity::monitor {
namespace {

bool is_time_key(const std::string& key) {
  return key.rfind("time/", 0) == 0 || key.find("/time/") != std::string::npos;
}

// Values of each key over the rows that have it; NaN counts as missing (pandas semantics).
std::map<std::string, std::vector<double>> columns(const std::vector<Metrics>& rows) {
  std::map<std::string, std::vector<double>> cols;
  for (const auto& row : rows)
    for (const auto& [k, v] : row)
      if (!std::isnan(v)) cols[k].push_back(v);
  return cols;
}

}  // namespace

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  double s = 0.0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double pop_std_of(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double m = mean_of(v);
  double s = 0.0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

Metrics gather_metrics(const std::vector<Metrics>& rows, const std::string& prefix) {
  Metrics out;
  for (const auto& [k, vals] : columns(rows)) {
    const std::string base = prefix.empty() ? k : prefix + "/" + k;
    out[base + "/mean"] = mean_of(vals);
    out[base + "/max"] = *std::max_element(vals.begin(), vals.end());
    out[base + "/min"] = *std::min_element(vals.begin(), vals.end());
  }
  return out;
}

Metrics eval_stats(const std::vector<double>& values, const std::string& key, uint64_t seed, int n_resamples) {
  Metrics out;
  if (values.empty()) return out;
  if (is_time_key(key)) {
    out[key] = mean_of(values);
    return out;
  }
  TRINITY_ASSERT(n_resamples > 0, "n_resamples must be positive");
  const size_t k = values.size();
  out[strcat(key, "/mean@", k)] = mean_of(values);
  out[strcat(key, "/std@", k)] = pop_std_of(values);
  if (k <= 1) return out;
  std::vector<size_t> ns;
  for (size_t n = 2; n < k; n *= 2) ns.push_back(n);
  ns.push_back(k);
  Rng rng(seed);  // one stream per (task, key): results are reproducible run to run
  for (size_t n : ns) {
    double sum_best = 0.0, sum_worst = 0.0;
    for (int r = 0; r < n_resamples; ++r) {
      double hi = -std::numeric_limits<double>::infinity(), lo = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < n; ++i) {
        const double x = values[rng.below(k)];
        hi = std::max(hi, x);
        lo = std::min(lo, x);
      }
      sum_best += hi;
      sum_worst += lo;
    }
    out[strcat(key, "/best@", n)] = sum_best / n_resamples;
    out[strcat(key, "/worst@", n)] = sum_worst / n_resamples;
  }
  return out;
}

Metrics task_metrics(const std::vector<Metrics>& runs, bool is_eval, uint64_t seed) {
  Metrics out;
  for (const auto& [k, vals] : columns(runs)) {
    if (!is_eval) {
      out[k] = mean_of(vals);
      continue;
    }
    for (auto& [name, v] : eval_stats(vals, k, seed)) out[name] = v;
  }
  return out;
}

Metrics aggregate_eval(const std::vector<Metrics>& tasks, const std::string& prefix, bool detailed_stats) {
  Metrics out;
  for (const auto& [k, vals] : columns(tasks)) {
    const std::string base = prefix + "/" + k;
    if (!detailed_stats || is_time_key(k)) {
      out[base] = mean_of(vals);
      continue;
    }
    out[base + "/mean"] = mean_of(vals);
    out[base + "/std"] = pop_std_of(vals);
    out[base + "/max"] = *std::max_element(vals.begin(), vals.end());
    out[base + "/min"] = *std::min_element(vals.begin(), vals.end());
  }
  out[prefix + "/finished_task_count"] = static_cast<double>(tasks.size());
  return out;
}

}  // namespace trinity::monitor
