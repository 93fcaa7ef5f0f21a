// rollout_pass_rate: pass rates of task rows with the rollout model (see rollout_scorer.h).
#include "launcher/rollout_scorer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "buffer/dataset.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "core/names.h"
#include "explorer/engine_client.h"
#include "launcher/launcher.h"
#include "launcher/llm_judge.h"
#include "model/transformer.h"
#include "monitor/progress.h"
#include "pipeline/llm_score.h"
#include "workflow/workflow.h"

namespace trinity::launcher {

namespace {

using json = nlohmann::json;

class RolloutPassRate : public pipeline::TaskOperator {
 public:
  RolloutPassRate(const config::Config& c, const pipeline::OperatorConfig& op) : c_(c) {
    const std::vector<std::string> known = {"repeat_times", "field", "model_path", "temperature", "max_tokens", "seed"};
    const json a = json::parse(op.args.empty() ? "{}" : op.args, nullptr, false);
    const std::string at = "task operator 'rollout_pass_rate': ";
    if (a.is_discarded() || !a.is_object())
      throw ConfigError("task_pipeline", strcat(at, "args must be a mapping, got ", op.args));
    for (const auto& [k, v] : a.items())
      if (std::find(known.begin(), known.end(), k) == known.end())
        throw ConfigError("task_pipeline", strcat(at, "unknown argument '", k, "'", did_you_mean_suffix(k, known),
                                                  "; accepted: ", join_names(known)));
    auto num = [&](const char* k, double def) {
      if (!a.contains(k)) return def;
      if (!a.at(k).is_number())
        throw ConfigError("task_pipeline", strcat(at, k, " must be a number, got ", a.at(k).dump()));
      return a.at(k).get<double>();
    };
    repeat_ = static_cast<int64_t>(num("repeat_times", 8));
    if (repeat_ < 1) throw ConfigError("task_pipeline", strcat(at, "repeat_times must be >= 1, got ", repeat_));
    temperature_ = num("temperature", 1.0);
    max_tokens_ = static_cast<int64_t>(num("max_tokens", static_cast<double>(c.model.max_response_tokens)));
    seed_ = static_cast<uint64_t>(num("seed", static_cast<double>(c.explorer.rollout_model.seed)));
    if (a.contains("field")) {
      if (!a.at("field").is_string() || a.at("field").get<std::string>().empty())
        throw ConfigError("task_pipeline", strcat(at, "field must be a column name, got ", a.at("field").dump()));
      field_ = a.at("field").get<std::string>();
    }
    model_path_ = c.model.model_path;
    if (a.contains("model_path")) {
      if (!a.at("model_path").is_string())
        throw ConfigError("task_pipeline",
                          strcat(at, "model_path must be a path or Hub id, got ", a.at("model_path").dump()));
      model_path_ = a.at("model_path").get<std::string>();
      if (!model_path_.empty() && model_path_[0] != '/' &&
          std::filesystem::exists(file::join(c.config_dir, model_path_)))
        model_path_ = file::join(c.config_dir, model_path_);
    }
    if (c.buffer.explorer_input.tasksets.empty())
      throw ConfigError("task_pipeline", at + "needs buffer.explorer_input.taskset (its workflow, reward and format)");
  }

  std::map<std::string, double> process(std::vector<std::string>& rows) override {
    if (rows.empty()) return {{"failed_count", 0}};
    // The rows as a taskset of the first training taskset's kind (strict: a row it cannot run is an
    // error naming the row, never silently left without a score).
    buffer::TasksetConfig ts = c_.buffer.explorer_input.tasksets[0];
    const std::string tmp = strcat(std::filesystem::temp_directory_path().string(), "/trinity-rollout-score-", getpid(),
                                   "-", this, ".jsonl");
    std::string text;
    for (const auto& r : rows) text += r + "\n";
    file::write_atomic(tmp, text);
    ts.path = tmp;
    ts.strict = true;
    ts.repeat_times = repeat_;
    ts.rollout_args.temperature = temperature_;
    ts.rollout_args.max_tokens = max_tokens_;
    ts.data_selector = {};
    ts.prompt_required = workflow::workflow_reads_prompt(ts.default_workflow_type);
    buffer::Taskset tasks;
    try {
      tasks = buffer::Taskset::load(ts);
    } catch (...) {
      std::filesystem::remove(tmp);
      throw;
    }
    std::filesystem::remove(tmp);
    config::Config mc = c_;
    mc.model.model_path = model_path_;
    mc = resolve_hub_models(mc);
    log::info("rollout_pass_rate: ", rows.size(), " rows x ", repeat_, " runs with ", mc.model.model_path);
    auto weights = std::make_shared<const model::Transformer>(model::Transformer::load(mc.model.model_path));
    const auto rm = make_rollout_model(mc, weights, 0);
    explorer::RunnerOptions ro;
    ro.runners = std::max<int64_t>(1, c_.explorer.runner_per_model);
    ro.max_timeout = c_.explorer.max_timeout;
    ro.max_retry_times = c_.explorer.max_retry_times;
    ro.work_dir = c_.config_dir;
    explorer::RunnerPool pool(ro, explorer::engine_client_factory(rm, make_auxiliary_models(mc)));
    std::vector<std::shared_future<explorer::TaskResult>> futs;
    for (size_t i = 0; i < tasks.size(); ++i) {
      explorer::TaskJob job;
      job.task = tasks.at(i);
      job.batch_id = "score";
      job.task_id = static_cast<int64_t>(i);
      job.seed = seed_ * 0x9E3779B97F4A7C15ULL + i;
      futs.push_back(pool.submit(std::move(job)));
    }
    monitor::ProgressBar bar("rollout_pass_rate", static_cast<int64_t>(futs.size()));
    int64_t failed = 0;
    for (size_t i = 0; i < futs.size(); ++i) {
      const explorer::TaskResult& r = futs[i].get();
      bar.update(static_cast<int64_t>(i + 1));
      json row = json::parse(rows[i]);
      double sum = 0;
      int64_t n = 0;
      for (const auto& e : r.experiences)
        if (e.reward && !std::isnan(*e.reward)) sum += *e.reward, ++n;
      if (!r.ok || n == 0) {
        ++failed;
        log::warn("rollout_pass_rate: row ", i, " has no score (", r.ok ? "no rewarded experience" : r.error, ")");
        row[field_] = nullptr;
      } else {
        row[field_] = sum / static_cast<double>(n);
        if (!row.contains("__dj__stats__") || !row["__dj__stats__"].is_object()) row["__dj__stats__"] = json::object();
        row["__dj__stats__"][field_] = sum / static_cast<double>(n);
      }
      rows[i] = row.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    bar.finish();
    return {{"failed_count", static_cast<double>(failed)}};
  }

 private:
  config::Config c_;
  int64_t repeat_ = 8, max_tokens_ = 0;
  double temperature_ = 1.0;
  uint64_t seed_ = 42;
  std::string field_ = "pass_rate", model_path_;
};

}  // namespace

pipeline::ModelOperatorFactory rollout_scorer_factory(const config::Config& c) {
  return [c](const pipeline::OperatorConfig& op) -> std::unique_ptr<pipeline::TaskOperator> {
    if (op.name == "llm_score") {
      const auto& tp = c.data_processor.task_pipeline;
      std::vector<std::string> keys = tp && !tp->target_fields.empty() ? tp->target_fields : std::vector<std::string>{};
      if (keys.empty())
        keys = {c.buffer.explorer_input.tasksets.empty() ? std::string("prompt")
                                                         : c.buffer.explorer_input.tasksets[0].format.prompt_key};
      return pipeline::make_llm_score_task_op(op, llm_judge_factory(c), keys);
    }
    if (op.name != "rollout_pass_rate") return nullptr;
    return std::make_unique<RolloutPassRate>(c, op);
  };
}

}  // namespace trinity::launcher
