// Workflow names checked before anything loads (`trinity config check`, `trinity run`, `trinity
// bench`): a taskset's default_workflow_type that no registered workflow has is a ConfigError naming
// the taskset, the name and the closest registered one -- not a run in which every task fails. A
// dotted name (upstream's `examples.bots.workflow.BOTSMathBoxedWorkflow`) is a Python class: the
// message says how to bring it (a command_workflow agent, docs/agents.md). The experience pipeline's
// operators (data_processor.experience_pipeline.operators) are made once, so a bad one fails too.
#pragma once

#include "config/config.h"

namespace trinity::cli {

// Every train and eval taskset of `r.config` and of each stage. Throws ConfigError("config", ...).
void check_workflow_names(const config::LoadResult& r);

}  // namespace trinity::cli
