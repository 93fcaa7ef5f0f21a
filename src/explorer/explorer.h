// Explorer (trinity-rft.md §5.6, §6.3): reads batch_size tasks per explore step from the taskset
// scheduler, runs them on the runner pool against the rollout engine, turns each finished step into
// experiences (explorer-side group advantages, e.g. GRPO, computed here on that step's experiences)
// and writes them to the buffer. Steps inside a sync interval are in flight together; at a sync point
// (step > sync_offset and (step - sync_offset) % sync_interval == 0) every pending step is finished,
// then the explorer waits for the trainer's weights and swaps them into the engine.
// The version it waits for is the number of full train batches the data written up to step
// (step - sync_offset) can make (= step - sync_offset when no task fails), so failed tasks never
// deadlock the explorer against a trainer that waits for data.
// Evaluation: every eval_interval steps (and at step 0 with eval_on_startup) all eval tasksets run
// with the current weights; per task eval stats over repeat_times runs (mean@k, std@k, best@n,
// worst@n), averaged over tasks as eval/<taskset>/<key>/<stat>.
// State (<job>/explorer_meta.json: step, taskset scheduler state, experiences written, weight
// version) is saved atomically at every sync point after the step's experiences were written, so a
// killed run resumes at the next unexplored step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "buffer/dataset.h"
#include "buffer/step_claims.h"
#include "buffer/storage.h"
#include "buffer/task_scheduler.h"
#include "explorer/engine_client.h"
#include "explorer/runner_pool.h"
#include "pipeline/operators.h"

namespace trinity::algo {
class Algorithm;
}
namespace trinity::monitor {
class Monitor;
}
namespace trinity::sync {
class Synchronizer;
}

namespace trinity::explorer {

struct EvalSet {
  std::string name;
  std::shared_ptr<const buffer::Taskset> taskset;
};

// The rollout model's client for one attempt and the function that cancels it.
struct RolloutClient {
  std::shared_ptr<workflow::ModelClient> client;
  std::function<void()> cancel;
};
using RolloutClientFactory = std::function<RolloutClient(const buffer::Task& task, uint64_t seed)>;

struct ExplorerOptions {
  RunnerOptions runner;
  int64_t eval_interval = 100;
  bool eval_on_startup = true;
  bool eval_at_end = true;       // trinity extension: evaluate the final weights after training ends
  int64_t sync_interval = 1, sync_offset = 0;
  double sync_timeout = 3600.0;
  int64_t train_batch_size = 1;  // experiences per train step (for the version to wait for)
  bool sync_with_trainer = true; // false: explore without waiting for weights (no trainer)
  bool sync_blocking = true;     // sync_style fixed: wait for the version; explorer_driven /
                                 // trainer_driven: take the newest published weights, never wait
  uint64_t seed = 42;
  std::string job_dir;           // explorer_meta.json lives here ("" = no state saved)
  bool detailed_stats = false;
  bool progress = true;          // progress bar on stderr
  // Makes each attempt's rollout client instead of an EngineClient over the RolloutModel (bench with
  // model.external_model). The Explorer's model may then be null: only evaluate() is available.
  RolloutClientFactory rollout_client;
  // data_processor.experience_pipeline.operators, run on each step's experiences before the
  // explorer-side group advantage (made in the constructor: a bad operator fails before exploring).
  std::vector<pipeline::OperatorConfig> experience_operators;
  pipeline::JudgeFactory judge;  // llm_score's judge model (launcher/llm_judge.h)
};

struct ExplorerSummary {
  int64_t steps = 0, tasks_ok = 0, tasks_failed = 0, experiences = 0;
  std::map<std::string, int64_t> failures;                // reason class -> count
  std::vector<std::pair<int64_t, Metrics>> evals;        // (weights version, eval metrics)
  bool stopped = false;                                   // Ctrl-C / stop flag
  std::string trainer_error;
};

class Explorer {
 public:
  Explorer(ExplorerOptions opts, std::shared_ptr<const RolloutModel> model,
           std::unique_ptr<buffer::TasksetScheduler> tasks, std::vector<EvalSet> evals, algo::Algorithm* algo,
           buffer::ExperienceStorage* out, monitor::Monitor* monitor, sync::Synchronizer* sync,
           const std::atomic<bool>* stop);
  ~Explorer();

  // Explores until the tasks run out, the trainer ends, or *stop; throws on a sync timeout.
  ExplorerSummary run();
  // Evaluates every eval taskset with the current weights; logs under `prefix` at `step`.
  Metrics evaluate(int64_t step, const std::string& prefix = "eval");
  // explorer.auxiliary_models (judges, teachers): workflows see them as RunContext::auxiliary_models.
  void set_auxiliary_models(std::vector<std::shared_ptr<const RolloutModel>> aux) { *aux_ = std::move(aux); }
  // Restores explorer_meta.json if present; returns whether it did.
  bool restore();
  // One of several explorer processes (distinct explorer.name): run() then takes whole explore steps
  // from `claims` (leases of lease_s seconds, renewed while the step runs), never blocks on the
  // trainer (it takes the newest published weights after each step) and ends when every step is done.
  void share_steps(buffer::StepClaims* claims, std::string name, double lease_s) {
    claims_ = claims, name_ = std::move(name), lease_s_ = lease_s;
  }
  int64_t step() const { return step_; }
  RunnerPool& pool() { return *pool_; }

 private:
  struct Pending {
    int64_t step = 0;
    std::string tasks_state;  // the scheduler's state right after this step's tasks were read
    std::vector<std::shared_future<TaskResult>> results;
    double t0 = 0;
  };
  void finish_step(Pending& p);
  ExplorerSummary run_shared();  // explorer_shared.cpp
  void submit_step(Pending& p, std::vector<buffer::Task> batch);
  // false: the trainer is done, stop exploring. log_wait: log time/wait_sync at `step`; max_want caps
  // the version waited for.
  bool sync_weights(int64_t step, bool log_wait = true, int64_t max_want = INT64_MAX);
  bool sync_on_resume();
  // Takes the newest published weights if newer than the engine's, without waiting; false when the
  // trainer is done.
  bool pull_newest_weights();
  void save_state();
  uint64_t task_seed(int64_t step, int64_t task) const;

  ExplorerOptions opts_;
  std::shared_ptr<const RolloutModel> model_;
  std::unique_ptr<buffer::TasksetScheduler> tasks_;
  std::vector<EvalSet> evals_;
  algo::Algorithm* algo_;
  buffer::ExperienceStorage* out_;
  monitor::Monitor* monitor_;
  sync::Synchronizer* sync_;
  const std::atomic<bool>* stop_;
  std::shared_ptr<std::vector<std::shared_ptr<const RolloutModel>>> aux_ =
      std::make_shared<std::vector<std::shared_ptr<const RolloutModel>>>();
  std::unique_ptr<RunnerPool> pool_;
  pipeline::ExperiencePipeline ops_;
  Rng rng_;
  int64_t step_ = 0;        // last step submitted
  int64_t saved_step_ = 0;  // last step whose experiences are written (explorer_meta.json)
  int64_t written_ = 0;
  std::map<int64_t, int64_t> written_at_;  // step -> experiences written up to and including it
  std::string saved_tasks_state_;
  int64_t last_eval_version_ = -1;
  int64_t prefix_query_seen_ = 0, prefix_hit_seen_ = 0;  // engine prefix-cache counters at the last step
  ExplorerSummary summary_;
  buffer::StepClaims* claims_ = nullptr;  // share_steps
  std::string name_;
  double lease_s_ = 600;
};

}  // namespace trinity::explorer
