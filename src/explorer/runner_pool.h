// Runner pool (trinity-rft.md §5.3): `runners` threads take tasks in submission order and run their
// workflow. Each attempt runs on its own thread under a deadline (max_timeout); a failed attempt
// (exception, no experiences, timeout) is retried up to max_retry_times more times, then the task
// is reported failed with its reason — a failing or hanging workflow never stops the run. On a
// timeout the attempt's ModelClient is cancelled (its engine requests end, later calls throw);
// a workflow that still does not return within the grace period is abandoned (its thread is
// detached and counted) and the runner goes on.
// Repeats: can_repeat workflows produce all repeat_times runs in one call; others are called
// repeat_times times and the runner sets eid.run. Experiences are stamped with eid.batch/task.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "buffer/experience.h"
#include "workflow/model_client.h"

namespace trinity::explorer {

struct RunnerOptions {
  int64_t runners = 8;          // explorer.runner_per_model
  double max_timeout = 1800.0;  // seconds per attempt
  int64_t max_retry_times = 2;  // retries after the first attempt
  double cancel_grace = 5.0;    // seconds a cancelled workflow gets to return before it is abandoned
  bool concurrent_repeats = false;  // concurrent_mode != sequential: repeats of a task run side by side
  // explorer.dynamic_timeout: once dynamic_min_tasks tasks completed, an attempt's timeout is
  // min(max_timeout * (max_retry_times + 1), average task time * dynamic_ratio).
  bool dynamic_timeout = false;
  double dynamic_ratio = 3.0;
  int64_t dynamic_min_tasks = 1;
  std::string work_dir;  // RunContext::work_dir: the config file's directory (agent commands run there)
  std::string log_dir;   // RunContext::log_dir: per-run agent logs ("" = the debug log)
};

struct TaskJob {
  buffer::Task task;
  std::string batch_id;  // "12" or "12/evalset"
  int64_t task_id = 0;
  uint64_t seed = 0;     // sampling seed of the first attempt
};

using Metrics = std::map<std::string, double>;

struct TaskResult {
  bool ok = false;
  std::string error;      // reason of the last failed attempt
  int64_t attempts = 0;
  double seconds = 0;
  std::vector<buffer::Experience> experiences;
  std::vector<Metrics> run_metrics;  // one per run: mean of each experience metric + time/run_execution
  Metrics metrics;                   // mean over runs + time/task_execution
};

// A client for one attempt and the function that cancels it.
struct AttemptClient {
  std::shared_ptr<workflow::ModelClient> client;
  std::function<void()> cancel;  // cancels client and every auxiliary client
  std::vector<std::shared_ptr<workflow::ModelClient>> auxiliary;  // explorer.auxiliary_models
};
using ClientFactory = std::function<AttemptClient(const buffer::Task& task, uint64_t seed)>;

class RunnerPool {
 public:
  RunnerPool(RunnerOptions opts, ClientFactory factory);
  ~RunnerPool();  // cancels running attempts and joins the runners
  RunnerPool(const RunnerPool&) = delete;
  RunnerPool& operator=(const RunnerPool&) = delete;

  std::shared_future<TaskResult> submit(TaskJob job);
  // Cancels every queued and running task (they finish with error "shutdown").
  void shutdown();
  int64_t abandoned() const { return abandoned_.load(); }
  int64_t busy() const { return busy_.load(); }

 private:
  struct Item {
    TaskJob job;
    std::promise<TaskResult> done;
  };
  void loop();
  TaskResult run_task(const TaskJob& job);
  double attempt_timeout();

  RunnerOptions opts_;
  ClientFactory factory_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Item>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
  std::atomic<int64_t> abandoned_{0}, busy_{0};
  std::mutex stats_mu_;
  int64_t completed_ = 0;
  double completed_seconds_ = 0;
  std::mutex cancel_mu_;
  std::map<uint64_t, std::function<void()>> running_cancels_;  // cancel functions of running attempts
  uint64_t next_attempt_ = 0;
};

}  // namespace trinity::explorer
