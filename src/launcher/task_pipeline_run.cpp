// data_processor.task_pipeline over files (see task_pipeline_run.h).
#include "launcher/task_pipeline_run.h"

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "buffer/dataset.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "core/sha256.h"
#include "launcher/rollout_scorer.h"

namespace trinity::launcher {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kReport = "task_pipeline_report.json";

// The config of the pipeline and every input's size and modification time.
std::string fingerprint(const config::DataProcessorConfig::TaskPipeline& tp, const std::string& model) {
  json j = {{"target_fields", tp.target_fields},
            {"priority_weights", tp.priority_weights},
            {"top_k", tp.top_k},
            {"model", model},
            {"operators", json::array()},
            {"inputs", json::array()}};
  for (const auto& o : tp.operators) j["operators"].push_back({o.name, o.args});
  for (const auto& in : tp.inputs) {
    std::error_code ec;
    const auto size = fs::file_size(in, ec);
    const auto mtime = fs::last_write_time(in, ec).time_since_epoch().count();
    j["inputs"].push_back({in, ec ? 0 : size, mtime});
  }
  return sha256_hex(j.dump());
}

}  // namespace

TaskPipelineRun run_task_pipeline(const config::Config& c, bool force) {
  if (!c.data_processor.task_pipeline)
    throw ConfigError("task_pipeline", "the config has no data_processor.task_pipeline section");
  const auto& tp = *c.data_processor.task_pipeline;
  TaskPipelineRun out;
  out.output_dir = tp.output;
  out.output_file = file::join(tp.output, "output.jsonl");
  const std::string fp = fingerprint(tp, c.model.model_path);
  const std::string report_path = file::join(tp.output, kReport);
  if (fs::exists(tp.output)) {
    json old = json::parse(file::exists(report_path) ? file::read_all(report_path) : "{}", nullptr, false);
    if (!force && old.is_object() && old.value("fingerprint", "") == fp && file::exists(out.output_file)) {
      log::info("task pipeline: ", tp.output, " was processed from the same inputs and config; reusing it");
      out.reused = true;
      return out;
    }
    if (!force)
      throw ConfigError("task_pipeline",
                        strcat("data_processor.task_pipeline.output '", tp.output, "' already exists",
                               old.is_object() && old.contains("fingerprint")
                                   ? " and was made from other inputs or another pipeline config"
                                   : " and was not written by a task pipeline",
                               "; remove it, set another output, or run `trinity data process --force`"));
  }
  // Input rows: every row object of every file (no format key required).
  buffer::FormatConfig fmt;
  if (!c.buffer.explorer_input.tasksets.empty()) fmt = c.buffer.explorer_input.tasksets[0].format;
  std::vector<std::string> rows;
  for (const auto& in : tp.inputs) {
    buffer::LoadReport rep;
    for (auto& r : buffer::Taskset::load_rows(in, "train", "", fmt, buffer::DatasetKind::kTaskAnyRow, false, rep))
      rows.push_back(std::move(r.json));
    log::info("task pipeline: ", rep.rows_read - rep.rows_skipped, " rows from ", in,
              rep.rows_skipped ? strcat(" (", rep.rows_skipped, " bad rows skipped; first: ", rep.problems.front(), ")")
                               : "");
  }
  pipeline::TaskPipelineSpec spec;
  for (const auto& o : tp.operators) spec.operators.push_back({o.name, o.args});
  spec.target_fields = tp.target_fields;
  spec.prompt_key = fmt.prompt_key;
  spec.priority_weights = tp.priority_weights;
  spec.top_k = tp.top_k;
  pipeline::TaskPipeline p(spec, rollout_scorer_factory(c));
  std::vector<std::string> done = p.run(std::move(rows), out.report, [&](size_t i, const std::string& name) {
    log::info("task pipeline: operator ", i + 1, "/", spec.operators.size(), " ", name);
  });
  // Write beside the output, then rename: the output directory is complete or absent.
  const std::string tmp = strcat(tp.output, ".tmp-", getpid());
  fs::remove_all(tmp);
  file::make_dirs(tmp);
  std::string text;
  for (const auto& r : done) text += r + "\n";
  file::write_atomic(file::join(tmp, "output.jsonl"), text);
  json rep = json::parse(out.report.to_json());
  rep["fingerprint"] = fp;
  rep["inputs"] = tp.inputs;
  file::write_atomic(file::join(tmp, kReport), rep.dump(1));
  if (fs::exists(tp.output)) fs::remove_all(tp.output);
  if (const std::string parent = fs::path(tp.output).parent_path().string(); !parent.empty()) file::make_dirs(parent);
  fs::rename(tmp, tp.output);
  const std::string table = out.report.to_text();
  for (size_t a = 0, b; a < table.size(); a = b + 1) {
    b = table.find('\n', a);
    if (b == std::string::npos) b = table.size();
    log::info(table.substr(a, b - a));
  }
  log::info("task pipeline: wrote ", done.size(), " rows to ", out.output_file);
  return out;
}

}  // namespace trinity::launcher
