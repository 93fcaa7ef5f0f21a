// Experience operators (data_processor.experience_pipeline.operators; trinity-rft.md §2.11 and the
// data section): run in order on each explore step's experiences before the explorer-side group
// advantage, as Trinity-RFT's experience pipeline does. Built-ins with Trinity's names, args and
// metrics:
//   reward_filter(threshold = 0.0)          keep reward >= threshold                 filtered_count
//   reward_std_filter(threshold = 0.0)      drop task groups (Eid::tid) of size < 2 or population
//                                           std <= threshold (dynamic sampling, no resampling)
//                                                                                    filtered_count
//   invalid_reward_filter                   drop pending (no reward) or NaN rewards  filtered_count
//   reward_shaping_mapper(reward_shaping_configs = [{stats_key, op_type ADD|SUB|MUL|DIV, weight}])
//                                           reward op= weight * info[stats_key] (DIV skipped when
//                                           the divisor is 0; a missing key leaves the reward)
//                                                                                    reward_diff/{mean,min,max}
//   pass_rate_calculator                    BOTS feedback: mean reward per (taskset, row) from
//                                           info.task_index, handed to the task scheduler
//                                           (pass_rate.cpp)                          selection/valid_ratio, ...
// Metrics are reported as experience_pipeline/<name>; the same key from two operators is summed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "buffer/experience.h"

namespace trinity::pipeline {

struct OperatorConfig {
  std::string name;
  std::string args = "{}";  // JSON object text
  bool operator==(const OperatorConfig&) const = default;
};

// Mean reward of each explored row of one taskset (Trinity's SELECTOR_METRIC entry).
struct SelectorFeedback {
  std::vector<int64_t> rows;
  std::vector<double> values;
};
using SelectorFeedbackMap = std::map<int64_t, SelectorFeedback>;  // taskset id -> feedback

// What operators hand back besides metrics.
struct OperatorContext {
  SelectorFeedbackMap selector_feedback;
};

class ExperienceOperator {
 public:
  virtual ~ExperienceOperator() = default;
  // Filters / maps `exps` in place; returns the operator's metrics (unprefixed).
  virtual std::map<std::string, double> process(std::vector<buffer::Experience>& exps, OperatorContext& ctx) = 0;
  std::map<std::string, double> process(std::vector<buffer::Experience>& exps) {
    OperatorContext ctx;
    return process(exps, ctx);
  }
};

// The judge of llm_score (llm_score.h): made on the operator's first run from its args.
class ExperienceOperator;
using JudgeFactory = std::function<std::function<std::string(const std::string&)>(const OperatorConfig&)>;

// ConfigError naming an unknown operator (with the closest name) or a bad / unknown argument.
// `judge` serves llm_score (without one, llm_score fails when it first runs).
std::unique_ptr<ExperienceOperator> make_operator(const OperatorConfig& cfg, const JudgeFactory& judge = {});
std::vector<std::string> operator_names();

// The operators of a pipeline, made once; run() applies them in order and returns
// experience_pipeline/* metrics and time/experience_pipeline/operator/<i>_<name> timings.
class ExperiencePipeline {
 public:
  explicit ExperiencePipeline(const std::vector<OperatorConfig>& ops, const JudgeFactory& judge = {});
  bool empty() const { return ops_.empty(); }
  // Selector feedback of the step goes to `ctx` (pass_rate_calculator).
  std::map<std::string, double> run(std::vector<buffer::Experience>& exps, OperatorContext& ctx);
  std::map<std::string, double> run(std::vector<buffer::Experience>& exps) {
    OperatorContext ctx;
    return run(exps, ctx);
  }

 private:
  std::vector<std::pair<std::string, std::unique_ptr<ExperienceOperator>>> ops_;
};

}  // namespace trinity::pipeline
