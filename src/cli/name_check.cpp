// Workflow names of every taskset checked against the workflow registry (name_check.h).
#include "cli/name_check.h"

#include "buffer/task_scheduler.h"
#include "core/error.h"
#include "core/names.h"
#include "launcher/rollout_scorer.h"
#include "pipeline/operators.h"
#include "pipeline/task_pipeline.h"
#include "workflow/workflow.h"

namespace trinity::cli {

namespace {

void check_taskset(const buffer::TasksetConfig& t, const std::string& where) {
  try {
    buffer::check_selector(t);
  } catch (const ConfigError& e) {
    if (where.empty()) throw;
    const std::string m = e.what();
    throw ConfigError(e.component(), where + m.substr(m.find("] ") + 2));
  }
  const std::string& w = t.default_workflow_type;
  if (w.empty() || workflow::has_workflow(w)) return;  // empty: rows name it (format.workflow_key)
  const std::string at = strcat(where, "taskset '", t.name, "': workflow '", w, "'");
  if (w.find('.') != std::string::npos)
    throw ConfigError("config", strcat(at, " is a Python class; trinity runs no Python in-process: bring the agent ",
                                       "as a command_workflow (any language, through the OpenAI API; docs/agents.md) ",
                                       "or use a built-in workflow (docs/workflows.md)"));
  const std::vector<std::string> names = workflow::workflow_names();
  throw ConfigError("config", strcat(at, " is not a trinity workflow", did_you_mean_suffix(w, names),
                                     "; see docs/workflows.md and docs/compatibility.md"));
}

void check_config(const config::Config& c, const std::string& stage) {
  const std::string where = stage.empty() ? "" : "stage " + stage + ": ";
  for (const auto& t : c.buffer.explorer_input.tasksets) check_taskset(t, where);
  for (const auto& t : c.buffer.explorer_input.eval_tasksets) check_taskset(t, where + "eval ");
  // Experience operators are made here once, so an unknown name or bad argument fails the check.
  for (const auto& op : c.data_processor.experience_operators) pipeline::make_operator({op.name, op.args});
  if (const auto& tp = c.data_processor.task_pipeline) {  // task operators, made (not run) once
    pipeline::TaskPipelineSpec spec;
    for (const auto& o : tp->operators) spec.operators.push_back({o.name, o.args});
    spec.priority_weights = tp->priority_weights;
    pipeline::TaskPipeline check(spec, launcher::rollout_scorer_factory(c));
  }
}

}  // namespace

void check_workflow_names(const config::LoadResult& r) {
  if (r.stages.empty()) {
    check_config(r.config, "");
    return;
  }
  for (const auto& s : r.stages) check_config(s, s.name);
}

}  // namespace trinity::cli
