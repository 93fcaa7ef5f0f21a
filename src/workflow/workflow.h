// Workflow interface and registry (trinity-rft.md §5.1). A workflow runs one task against the
// rollout model and returns experiences; it never sees the engine, only a ModelClient.
//   can_repeat() == true: one run() produces all ctx.repeat_times runs (usually one request with
//     n = repeat_times) and sets eid.run = ctx.run_id_base + i.
//   otherwise the runner calls run() repeat_times times with repeat_times = 1 and sets eid.run.
// run() returning no experiences counts as a failed attempt. Every experience carries
// metrics (the reward components, logged as rollout/<key>) and reward (their sum unless the
// workflow says otherwise). The runner stamps eid.batch / eid.task; a workflow may set eid.batch to
// a tag starting with '-' (e.g. "-ruler"), which the runner appends to the batch id, to put
// experiences in a GRPO group of their own (Trinity's task id "<id>-ruler"). Workflows are created
// per task by name from the registry; names are Trinity's WORKFLOWS keys (math_workflow, ...).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "buffer/experience.h"
#include "core/rng.h"
#include "workflow/model_client.h"

namespace trinity::workflow {

struct RunContext {
  const buffer::Task* task = nullptr;
  ModelClient* model = nullptr;
  std::vector<ModelClient*> auxiliary_models;  // explorer.auxiliary_models, in config order
  int64_t repeat_times = 1;  // runs this call must produce (1 unless can_repeat)
  int64_t run_id_base = 0;   // eid.run of the first run
  Rng* rng = nullptr;        // deterministic per (seed, task, attempt)
  // Where the run is: eid.batch / eid.task it will get, the config file's directory (commands run
  // there) and a folder for per-run log files ("" = none; logs go to the debug log).
  std::string batch_id = "0";
  int64_t task_id = 0;
  std::string work_dir, log_dir;
};

class Workflow {
 public:
  virtual ~Workflow() = default;
  virtual bool can_repeat() const { return false; }
  virtual std::vector<buffer::Experience> run(RunContext& ctx) = 0;
};

using WorkflowFactory = std::function<std::unique_ptr<Workflow>(const buffer::Task& task)>;

// Registers a workflow under `name` (replacing an existing one; tests register fault injectors).
void register_workflow(const std::string& name, WorkflowFactory factory);
// A new workflow for `task` by name. ConfigError naming the unknown name, with a did-you-mean
// and the list of registered names.
std::unique_ptr<Workflow> make_workflow(const std::string& name, const buffer::Task& task);
bool has_workflow(const std::string& name);
// False for built-ins registered with reads_prompt = false (builtins.h): workflows that build their
// prompt from their own columns (frozen_lake_workflow: seed / size / p), so their tasksets need no
// prompt key (upstream's frozen lake data has none).
bool workflow_reads_prompt(const std::string& name);
std::vector<std::string> workflow_names();
// Built-in alias names and the workflow each stands for (Trinity's async_* variants).
const std::vector<std::pair<std::string, std::string>>& workflow_aliases();

}  // namespace trinity::workflow
