// Runs data_processor.task_pipeline (pipeline/task_pipeline.h) over its input files and writes the
// processed taskset: <output>/output.jsonl plus <output>/task_pipeline_report.json (operators with
// rows kept / dropped and timings, score histograms, and a fingerprint of the config and inputs).
// The directory appears whole or not at all (written beside it, then renamed). `trinity run` calls
// this before a stage in modes explore / train / both, `trinity data process` on its own. An output
// written by the same config and inputs is reused (a rerun or resume does not process twice); any
// other existing output is an error unless `force` (Trinity-RFT requires a new path).
// Model operators: rollout_pass_rate {repeat_times (8), field ("pass_rate"), model_path (model.model_path),
// temperature (1.0), max_tokens (model.max_response_tokens)} runs each row `repeat_times` times
// with the first taskset's workflow and reward and writes the mean reward to `field` (and to
// "__dj__stats__"), which difficulty_score and BOTS' feature_keys use.
#pragma once

#include <string>

#include "config/config.h"
#include "pipeline/task_pipeline.h"

namespace trinity::launcher {

struct TaskPipelineRun {
  std::string output_dir, output_file;
  pipeline::TaskPipelineReport report;
  bool reused = false;  // an earlier run's output of the same config and inputs
};

TaskPipelineRun run_task_pipeline(const config::Config& c, bool force = false);

}  // namespace trinity::launcher
