// pass_rate_calculator: BOTS' feedback operator (trinity-rft.md §4.5). Groups the step's experiences
// by info.task_index {taskset_id, index} (set by the runner for every explored task), hands the mean
// reward of each row to the task scheduler through OperatorContext::selector_feedback and reports
// Trinity's selection/* ratios over those pass rates. Experiences are passed through unchanged; ones
// without a task index (serve mode) or without a reward are not counted (selection/skipped_count).
#include <cmath>
#include <string>
#include <vector>

#include "pipeline/operator_util.h"

namespace trinity::pipeline {

namespace {

class PassRateCalculator : public ExperienceOperator {
 public:
  std::map<std::string, double> process(std::vector<buffer::Experience>& exps, OperatorContext& ctx) override {
    struct Row {
      double sum = 0;
      int64_t n = 0;
    };
    // taskset id -> rows in order of first appearance (as Trinity's dicts keep them).
    std::map<int64_t, std::vector<std::pair<int64_t, Row>>> by_set;
    std::map<std::pair<int64_t, int64_t>, size_t> pos;
    int64_t skipped = 0;
    for (const auto& e : exps) {
      int64_t ts = -1, row = -1;
      if (!e.info.empty() && e.reward && !std::isnan(*e.reward)) {
        try {
          const json info = json::parse(e.info);
          if (info.is_object() && info.contains("task_index")) {
            const json& ti = info.at("task_index");
            ts = ti.value("taskset_id", int64_t{-1});
            row = ti.value("index", int64_t{-1});
          }
        } catch (const json::exception&) {
        }
      }
      if (ts < 0 || row < 0) {
        ++skipped;
        continue;
      }
      auto& rows = by_set[ts];
      auto [it, fresh] = pos.emplace(std::make_pair(ts, row), rows.size());
      if (fresh) rows.emplace_back(row, Row{});
      Row& r = rows[it->second].second;
      r.sum += *e.reward;
      ++r.n;
    }
    std::vector<double> all;
    for (const auto& [ts, rows] : by_set) {
      SelectorFeedback& fb = ctx.selector_feedback[ts];
      for (const auto& [row, r] : rows) {
        const double pr = r.sum / static_cast<double>(r.n);
        fb.rows.push_back(row);
        fb.values.push_back(pr);
        all.push_back(pr);
      }
    }
    std::map<std::string, double> m = {{"selection/skipped_count", static_cast<double>(skipped)}};
    if (all.empty()) return m;
    auto ratio = [&](auto pred) {
      double k = 0;
      for (double pr : all) k += pred(pr) ? 1 : 0;
      return k / static_cast<double>(all.size());
    };
    constexpr double lo = 1.0 / 16 + 1e-3, hi = 15.0 / 16 - 1e-3;
    m["selection/valid_ratio"] = ratio([](double pr) { return 0 < pr && pr < 1; });
    m["selection/strict_valid_ratio"] = ratio([&](double pr) { return lo < pr && pr < hi; });
    m["selection/<1_ratio"] = ratio([](double pr) { return pr < 1; });
    m["selection/>0_ratio"] = ratio([](double pr) { return pr > 0; });
    m["selection/<15_16_ratio"] = ratio([&](double pr) { return pr < hi; });
    m["selection/>1_16_ratio"] = ratio([&](double pr) { return pr > lo; });
    return m;
  }
};

}  // namespace

std::unique_ptr<ExperienceOperator> make_pass_rate_calculator(const OperatorConfig& cfg) {
  parse_args(cfg, {});
  return std::make_unique<PassRateCalculator>();
}

}  // namespace trinity::pipeline
