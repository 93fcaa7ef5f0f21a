// Pure metric helpers behind Trinity-RFT's metric names (reference §5.3, §8):
//   gather_metrics   rows -> <prefix>/<k>/{mean,max,min} over the rows that have k (rollout/*).
//   eval_stats       one task's k run values of one key -> <key>/mean@k, <key>/std@k (population),
//                    and for k > 1 bootstrap <key>/best@n, <key>/worst@n for n = 2,4,8,... < k and
//                    n = k: 1000 resamples of n draws with replacement (Rng seeded with `seed`),
//                    best@n = mean over resamples of the max (worst: of the min). "time/" keys and
//                    keys containing "time/" are only averaged, under their own name.
//   aggregate_eval   per-task eval metrics -> <prefix>/<metric> = mean over tasks (and with
//                    detailed_stats <prefix>/<metric>/{mean,std,max,min}), plus finished_task_count.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trinity::monitor {

using Metrics = std::map<std::string, double>;

Metrics gather_metrics(const std::vector<Metrics>& rows, const std::string& prefix);

Metrics eval_stats(const std::vector<double>& values, const std::string& key, uint64_t seed = 42,
                   int n_resamples = 1000);

// Task-level metrics of one task from its runs' metrics: eval_stats for every key (over the runs
// that report it) when is_eval, else the mean over runs of every key.
Metrics task_metrics(const std::vector<Metrics>& runs, bool is_eval, uint64_t seed = 42);

// Across-task aggregation of task_metrics(..., is_eval=true) rows. prefix e.g. "eval/gsm8k" or
// "bench/gsm8k". Time keys get only the mean.
Metrics aggregate_eval(const std::vector<Metrics>& tasks, const std::string& prefix, bool detailed_stats);

// Population mean / std helpers (NaN for an empty input).
double mean_of(const std::vector<double>& v);
double pop_std_of(const std::vector<double>& v);

}  // namespace trinity::monitor
