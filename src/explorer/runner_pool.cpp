// Runner pool: task queue, per-attempt threads with deadlines, retries (see runner_pool.h).
#include "explorer/runner_pool.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "workflow/workflow.h"

namespace trinity::explorer {

namespace {

using Clock = std::chrono::steady_clock;

// State one attempt shares with its thread (which may outlive the runner when abandoned).
struct Attempt {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::vector<buffer::Experience> exps;
  std::vector<double> run_seconds;  // per run (can_repeat: one entry for all runs)
  bool repeated_inside = false;
  std::string error;
  buffer::Task task;  // owned copy: the thread may outlive the job
  AttemptClient client;
};

// One run of a workflow that is not can_repeat (run id r), with its own instance and rng stream.
std::vector<buffer::Experience> run_once(const workflow::RunContext& base, const buffer::Task& task,
                                         workflow::ModelClient* model, const std::vector<workflow::ModelClient*>& aux,
                                         uint64_t seed, int64_t r, double* seconds) {
  Rng rng(seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(r + 1));
  workflow::RunContext ctx = base;
  ctx.task = &task;
  ctx.model = model;
  ctx.auxiliary_models = aux;
  ctx.rng = &rng;
  ctx.repeat_times = 1;
  ctx.run_id_base = r;
  auto wf = workflow::make_workflow(task.workflow, task);
  Timer t;
  auto part = wf->run(ctx);
  *seconds = t.seconds();
  if (part.empty()) throw ValueError("explorer", strcat("workflow '", task.workflow, "' returned no experiences"));
  for (auto& e : part) e.eid.run = r;
  return part;
}

void run_attempt(const std::shared_ptr<Attempt>& st, std::string batch_id, int64_t task_id, uint64_t seed,
                 uint64_t uid_seed, bool concurrent, std::string work_dir, std::string log_dir) {
  workflow::RunContext base;
  base.batch_id = batch_id;
  base.task_id = task_id;
  base.work_dir = std::move(work_dir);
  base.log_dir = std::move(log_dir);
  std::vector<buffer::Experience> exps;
  std::vector<double> run_seconds;
  bool inside = false;
  std::string error;
  try {
    const buffer::Task& task = st->task;
    workflow::ModelClient* model = st->client.client.get();
    std::vector<workflow::ModelClient*> aux;
    for (const auto& a : st->client.auxiliary) aux.push_back(a.get());
    auto wf = workflow::make_workflow(task.workflow, task);
    const int64_t repeats = std::max<int64_t>(1, task.repeat_times);
    if (wf->can_repeat()) {
      Rng rng(seed);
      workflow::RunContext ctx = base;
      ctx.task = &task;
      ctx.model = model;
      ctx.auxiliary_models = aux;
      ctx.rng = &rng;
      inside = true;
      ctx.repeat_times = repeats;
      ctx.run_id_base = 0;
      Timer t;
      exps = wf->run(ctx);
      run_seconds.push_back(t.seconds());
    } else if (concurrent && repeats > 1) {
      // explorer.concurrent_mode asynchronous / multi-threading: the repeats run side by side (each
      // with its own workflow instance), so their model calls batch together in the engine.
      std::vector<std::vector<buffer::Experience>> parts(static_cast<size_t>(repeats));
      std::vector<std::string> errors(static_cast<size_t>(repeats));
      run_seconds.assign(static_cast<size_t>(repeats), 0.0);
      std::vector<std::thread> threads;
      for (int64_t r = 0; r < repeats; ++r)
        threads.emplace_back([&, r] {
          const size_t i = static_cast<size_t>(r);
          try {
            parts[i] = run_once(base, task, model, aux, seed, r, &run_seconds[i]);
          } catch (const std::exception& e) {
            errors[i] = e.what();
          }
        });
      for (auto& t : threads) t.join();
      for (const auto& e : errors)
        if (!e.empty()) throw ValueError("explorer", e);
      for (auto& p : parts)
        for (auto& e : p) exps.push_back(std::move(e));
    } else {
      for (int64_t r = 0; r < repeats; ++r) {
        double secs = 0;
        auto part = run_once(base, task, model, aux, seed, r, &secs);
        run_seconds.push_back(secs);
        for (auto& e : part) exps.push_back(std::move(e));
      }
    }
    if (exps.empty()) throw ValueError("explorer", strcat("workflow '", task.workflow, "' returned no experiences"));
    // Suffixes are a function of the task's seed, run and position: a step explored again after a
    // crash (between writing its experiences and saving the explorer state) produces the same uids,
    // which the sqlite buffer ignores instead of storing (and training) them twice.
    std::map<int64_t, uint64_t> in_run;
    const nlohmann::json task_index = {{"index", task.index.row}, {"taskset_id", task.index.taskset_id}};
    for (auto& e : exps) {
      // Trinity's workflow runner tags every experience with its task's index (pass_rate_calculator
      // reads it); an info that is not a JSON object is left as the workflow wrote it.
      nlohmann::json info = e.info.empty() ? nlohmann::json::object() : nlohmann::json::parse(e.info, nullptr, false);
      if (info.is_object() && !info.contains("task_index")) {
        info["task_index"] = task_index;
        e.info = info.dump();
      }
      // A workflow's group tag ("-ruler", workflow.h) stays as a suffix of the batch id.
      e.eid.batch = e.eid.batch.rfind('-', 0) == 0 ? batch_id + e.eid.batch : batch_id;
      e.eid.task = task_id;
      if (e.eid.suffix.empty()) {
        Rng h(uid_seed ^ (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(e.eid.run + 1)) ^
              (0xBF58476D1CE4E5B9ULL * (in_run[e.eid.run]++ + 1)) ^
              (0x94D049BB133111EBULL * static_cast<uint64_t>(e.eid.step + 1)));  // seeding mixes the bits
        const uint64_t x = h.next_u64();
        char buf[8];
        std::snprintf(buf, sizeof buf, "%06llx", static_cast<unsigned long long>(x & 0xFFFFFF));
        e.eid.suffix = buf;
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::lock_guard<std::mutex> l(st->mu);
  st->exps = std::move(exps);
  st->run_seconds = std::move(run_seconds);
  st->repeated_inside = inside;
  st->error = std::move(error);
  st->done = true;
  st->cv.notify_all();
}

// Mean of each metric key over the experiences of each run, plus time/run_execution.
std::vector<Metrics> per_run_metrics(const std::vector<buffer::Experience>& exps, const std::vector<double>& secs,
                                     bool inside) {
  std::map<int64_t, std::vector<const buffer::Experience*>> runs;
  for (const auto& e : exps) runs[e.eid.run].push_back(&e);
  std::vector<Metrics> out;
  size_t i = 0;
  for (const auto& [run, list] : runs) {
    Metrics m;
    std::map<std::string, int64_t> n;
    for (const auto* e : list)
      for (const auto& [k, v] : e->metrics) m[k] += v, n[k] += 1;
    for (auto& [k, v] : m) v /= static_cast<double>(n[k]);
    // The run's reward (mean over its experiences). Trinity-RFT logs only the reward function's
    // components; rollout/reward/* and eval/<set>/reward/mean@k make runs comparable across rewards.
    double rsum = 0;
    int64_t rn = 0;
    for (const auto* e : list)
      if (e->reward) rsum += *e->reward, ++rn;
    if (rn > 0 && !m.count("reward")) m["reward"] = rsum / static_cast<double>(rn);
    const double t = inside ? (secs.empty() ? 0.0 : secs[0]) : (i < secs.size() ? secs[i] : 0.0);
    m["time/run_execution"] = t;
    out.push_back(std::move(m));
    ++i;
  }
  return out;
}

}  // namespace

RunnerPool::RunnerPool(RunnerOptions opts, ClientFactory factory) : opts_(opts), factory_(std::move(factory)) {
  if (opts_.runners < 1) throw ConfigError("explorer", strcat("runner_per_model must be >= 1, got ", opts_.runners));
  for (int64_t i = 0; i < opts_.runners; ++i) threads_.emplace_back([this] { loop(); });
}

RunnerPool::~RunnerPool() {
  shutdown();
  for (auto& t : threads_) t.join();
}

void RunnerPool::shutdown() {
  std::deque<std::unique_ptr<Item>> dropped;
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  {
    std::lock_guard<std::mutex> l(cancel_mu_);
    for (auto& [id, c] : running_cancels_) c();
  }
  for (auto& it : dropped) {
    TaskResult r;
    r.error = "shutdown";
    it->done.set_value(std::move(r));
  }
}

std::shared_future<TaskResult> RunnerPool::submit(TaskJob job) {
  auto item = std::make_unique<Item>();
  item->job = std::move(job);
  std::shared_future<TaskResult> f = item->done.get_future().share();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) {
      TaskResult r;
      r.error = "shutdown";
      item->done.set_value(std::move(r));
      return f;
    }
    queue_.push_back(std::move(item));
  }
  cv_.notify_one();
  return f;
}

void RunnerPool::loop() {
  for (;;) {
    std::unique_ptr<Item> item;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    ++busy_;
    TaskResult r = run_task(item->job);
    --busy_;
    item->done.set_value(std::move(r));
  }
}

double RunnerPool::attempt_timeout() {
  if (!opts_.dynamic_timeout) return opts_.max_timeout;
  std::lock_guard<std::mutex> l(stats_mu_);
  if (completed_ < std::max<int64_t>(1, opts_.dynamic_min_tasks)) return opts_.max_timeout;
  const double avg = completed_seconds_ / static_cast<double>(completed_);
  return std::min(opts_.max_timeout * static_cast<double>(opts_.max_retry_times + 1), avg * opts_.dynamic_ratio);
}

TaskResult RunnerPool::run_task(const TaskJob& job) {
  TaskResult res;
  Timer total;
  const int64_t max_attempts = 1 + std::max<int64_t>(0, opts_.max_retry_times);
  for (int64_t a = 0; a < max_attempts; ++a) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) {
        res.error = "shutdown";
        break;
      }
    }
    res.attempts = a + 1;
    auto st = std::make_shared<Attempt>();
    st->task = job.task;
    const uint64_t seed = job.seed + static_cast<uint64_t>(a) * 1000003ULL;
    try {
      st->client = factory_(st->task, seed);
    } catch (const std::exception& e) {
      res.error = e.what();
      continue;
    }
    uint64_t id;
    {
      std::lock_guard<std::mutex> l(cancel_mu_);
      id = next_attempt_++;
      running_cancels_[id] = st->client.cancel;
    }
    const double timeout = attempt_timeout();
    std::thread th(run_attempt, st, job.batch_id, job.task_id, seed, job.seed, opts_.concurrent_repeats, opts_.work_dir,
                   opts_.log_dir);
    bool finished;
    {
      std::unique_lock<std::mutex> l(st->mu);
      finished = st->cv.wait_for(l, std::chrono::duration<double>(timeout), [&] { return st->done; });
    }
    bool timed_out = false;
    if (!finished) {
      timed_out = true;
      st->client.cancel();
      std::unique_lock<std::mutex> l(st->mu);
      finished = st->cv.wait_for(l, std::chrono::duration<double>(opts_.cancel_grace), [&] { return st->done; });
    }
    {
      std::lock_guard<std::mutex> l(cancel_mu_);
      running_cancels_.erase(id);
    }
    if (finished) {
      th.join();
    } else {
      th.detach();
      ++abandoned_;
      log::warn("explorer: task ", job.batch_id, "/", job.task_id, " (workflow '", job.task.workflow,
                "') did not return ", opts_.cancel_grace, " s after its timeout was cancelled; its thread is abandoned");
    }
    if (timed_out) {
      res.error = strcat("timeout after ", timeout, " s");
      continue;
    }
    std::lock_guard<std::mutex> l(st->mu);
    if (!st->error.empty()) {
      res.error = st->error;
      continue;
    }
    res.ok = true;
    res.error.clear();
    res.experiences = std::move(st->exps);
    res.run_metrics = per_run_metrics(res.experiences, st->run_seconds, st->repeated_inside);
    break;
  }
  res.seconds = total.seconds();
  if (res.ok) {
    std::lock_guard<std::mutex> l(stats_mu_);
    ++completed_;
    completed_seconds_ += res.seconds;
  }
  if (res.ok) {
    std::map<std::string, int64_t> n;
    for (const auto& m : res.run_metrics)
      for (const auto& [k, v] : m) res.metrics[k] += v, n[k] += 1;
    for (auto& [k, v] : res.metrics) v /= static_cast<double>(n[k]);
    res.metrics["time/task_execution"] = res.seconds;
  }
  return res;
}

}  // namespace trinity::explorer
