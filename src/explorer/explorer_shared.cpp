// Explorer::run_shared: one of several explorer processes of one job (distinct explorer.name), each
// taking whole explore steps from the experience buffer's step leases (buffer/step_claims.h). The
// task scheduler is a deterministic function of the step (selectors without feedback), so every
// explorer reads the same tasks for step k and uses the same task seeds; a dead explorer's step is
// taken over after its lease expires. Explorers never block on the trainer: before each step (and each
// evaluation) they take the newest weights the trainer has published (checkpoint sync through the
// shared job directory).
#include <chrono>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "explorer/explorer.h"
#include "monitor/progress.h"
#include "sync/synchronizer.h"

namespace trinity::explorer {

ExplorerSummary Explorer::run_shared() {
  TRINITY_ASSERT(claims_ && tasks_, "run_shared needs step leases and a taskset");
  if (tasks_->wants_feedback())
    throw ConfigError("explorer", strcat("explorer.name '", name_,
                                         "' shares the taskset with other explorers, but a "
                                         "data_selector of type difficulty_based learns from every step's results "
                                         "in order: use it with one explorer"));
  auto stopping = [&] { return stop_ && stop_->load(); };
  const std::string start = tasks_->state();
  std::unique_ptr<monitor::ProgressBar> bar;
  if (opts_.progress) bar = std::make_unique<monitor::ProgressBar>("explore", tasks_->max_steps());
  bool told_waiting = false;
  log::info("explorer ", name_, ": sharing ", tasks_->max_steps(), " explore steps through ", claims_->describe(),
            " (lease ", lease_s_, " s)");
  while (!stopping()) {
    std::string previous;
    const int64_t k = claims_->claim(name_, tasks_->max_steps(), lease_s_, &previous);
    if (k < 0) break;  // every step is done
    if (k == 0) {
      if (!told_waiting)
        log::info("explorer ", name_,
                  ": the remaining steps are being explored by other explorers; waiting (a step "
                  "whose explorer dies is taken over when its lease expires)");
      told_waiting = true;
      for (int i = 0; i < 10 && !stopping(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    told_waiting = false;
    log::debug("explorer ", name_, ": exploring step ", k);
    if (!previous.empty())
      log::warn("explorer ", name_, ": exploring step ", k, " again: the lease of explorer '", previous,
                "' expired (it died or hangs)");
    if (k <= tasks_->step()) tasks_->load_state(start);  // an earlier step: read the sequence again
    std::optional<std::vector<buffer::Task>> batch;
    while (tasks_->step() < k) batch = tasks_->next_batch();
    if (!batch) throw Error("explorer", strcat("explore step ", k, " is past the taskset's ", tasks_->max_steps()));
    step_ = k;
    if (sync_) pull_newest_weights();  // without waiting
    Pending p;
    p.step = k;
    submit_step(p, std::move(*batch));
    // Keep the lease while the tasks run; a lease lost (taken over) drops this step's results.
    auto renewed = std::chrono::steady_clock::now();
    bool lost = false;
    for (auto& f : p.results)
      while (!stopping() && f.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
        if (std::chrono::steady_clock::now() - renewed > std::chrono::duration<double>(lease_s_ / 3)) {
          lost = lost || !claims_->renew(k, name_, lease_s_);
          renewed = std::chrono::steady_clock::now();
        }
      }
    if (stopping()) break;
    if (lost || !claims_->renew(k, name_, lease_s_)) {
      log::warn("explorer ", name_, ": step ", k, " was taken over by another explorer (this one was slower than ",
                "the lease of ", lease_s_, " s: raise buffer.trainer_input.experience_buffer.lease_timeout); its ",
                "results are dropped");
      continue;
    }
    finish_step(p);  // one write: the step's experiences land together or not at all
    claims_->done(k, name_);
    summary_.steps += 1;
    if (opts_.eval_interval > 0 && k % opts_.eval_interval == 0 && !stopping()) {
      if (sync_) pull_newest_weights();
      evaluate(k);
    }
    if (bar) bar->update(claims_->stats().done);
  }
  if (stopping()) {
    pool_->shutdown();
    summary_.stopped = true;
    log::warn("explorer ", name_, ": stopped; its unfinished step is taken over by another explorer when its lease ",
              "expires, or by this one when it restarts");
    return summary_;
  }
  if (bar) bar->finish();
  log::info("explorer ", name_, ": every explore step is done (", summary_.steps, " of ", tasks_->max_steps(),
            " explored here)");
  return summary_;
}

}  // namespace trinity::explorer
