// The task pipeline's model operator rollout_pass_rate (task_pipeline_run.h): each row is run
// repeat_times times through the first training taskset's workflow and reward with a local model
// (model_path, default model.model_path), and its mean reward is written to `field`.
#pragma once

#include "config/config.h"
#include "pipeline/task_pipeline.h"

namespace trinity::launcher {

// Makes the model operators of the task pipeline for `c`: rollout_pass_rate and llm_score
// (launcher/llm_judge.h); nullptr for other names.
pipeline::ModelOperatorFactory rollout_scorer_factory(const config::Config& c);

}  // namespace trinity::launcher
