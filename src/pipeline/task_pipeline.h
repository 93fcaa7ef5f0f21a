// The task pipeline (data_processor.task_pipeline, trinity-rft.md §2.11): operators over the rows of a
// raw taskset, then the priority score and order of Trinity-RFT's Data-Juicer task session:
//   operators   data ops (data_ops.h) over the text of `text_keys` (args; default target_fields,
//               else the prompt key) joined by "\n"; `command` (jsonl_command.h; rows carry an
//               `id_key` (default "id") that must not be a column already); model operators the
//               caller provides (the launcher's rollout_pass_rate)
//   scores      per row, from stats at the top level or under "__dj__stats__" (Data-Juicer's field):
//               quality_score = mean of the normalised quality stats present (alnum_ratio,
//               stopwords_ratio, llm_quality_score higher is better; char_rep_ratio,
//               flagged_words_ratio, special_char_ratio, word_rep_ratio lower is better; range [0, 1]);
//               difficulty_score likewise (llm_difficulty_score higher; lang_score lower; perplexity
//               higher, min-max over the rows; any "*pass_rate" stat lower, [0, 1])
//   priority    usage_frequency·consumed_cnt + quality·(quality_score or 0.5) +
//               difficulty·(difficulty_score or 0.5); weights default to Trinity's {difficulty −0.7,
//               diversity 0.8, usage_frequency −0.5, quality 1.0} (diversity has no score, as there);
//               a row that already has "priority" keeps it
//   order       rows with scores are sorted by priority, highest first (stable); without any stats
//               the order is kept; top_k (−1 = all) then keeps the first k. Trinity applies top_k only
//               when it sorts; here it always applies, as its documentation says.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/operators.h"

namespace trinity::pipeline {

// An operator over task rows (JSON object texts): filters, maps or adds columns in place; returns
// its metrics (unprefixed).
class TaskOperator {
 public:
  virtual ~TaskOperator() = default;
  virtual std::map<std::string, double> process(std::vector<std::string>& rows) = 0;
};

struct TaskPipelineSpec {
  std::vector<OperatorConfig> operators;
  std::vector<std::string> target_fields;
  std::string prompt_key = "prompt";    // the text when neither text_keys nor target_fields is given
  std::string priority_weights = "{}";  // JSON object
  int64_t top_k = -1;
};

// Makes the operators the pipeline does not know (nullptr = not one of them).
using ModelOperatorFactory = std::function<std::unique_ptr<TaskOperator>(const OperatorConfig&)>;

struct TaskPipelineReport {
  struct Op {
    std::string name;
    int64_t rows_in = 0, rows_out = 0;
    double seconds = 0;
    std::map<std::string, double> metrics;
  };
  int64_t rows_in = 0, rows_out = 0;
  std::vector<Op> ops;
  bool sorted = false;  // rows had scores and were ordered by priority
  // Histograms (10 equal bins over [min, max]) of priority, quality_score, difficulty_score and
  // pass-rate columns: name -> {min, max, counts}.
  struct Histogram {
    double min = 0, max = 0;
    std::vector<int64_t> counts;
  };
  std::map<std::string, Histogram> histograms;
  std::string to_json() const;  // the report file
  std::string to_text() const;  // a table for the terminal
};

class TaskPipeline {
 public:
  // ConfigError naming an unknown operator (with the closest name) or a bad argument.
  explicit TaskPipeline(const TaskPipelineSpec& spec, const ModelOperatorFactory& model_ops = {});
  // Runs the operators in order, then scores and orders. on_op(i, name) is called before operator i.
  std::vector<std::string> run(std::vector<std::string> rows, TaskPipelineReport& report,
                               const std::function<void(size_t, const std::string&)>& on_op = {});
  static std::vector<std::string> builtin_names();

 private:
  TaskPipelineSpec spec_;
  std::vector<std::pair<std::string, std::unique_ptr<TaskOperator>>> ops_;
};

}  // namespace trinity::pipeline
