// Runs under the studio root (docs/studio.md "Runs"): discovery of job dirs (a folder with
// run_status.json or monitor/metrics.jsonl; <checkpoint_root_dir>/<project>/<name>[/<stage>]), their
// state from the launcher's status files (a "running" run whose process is gone is failed), step and
// last reward from metrics.jsonl, and starting / stopping / resuming `trinity run` child processes
// (posix_spawn with an argument vector, never a shell; their own process group, so a Ctrl-C of the
// studio does not stop them; stdout + stderr to <job_dir>/studio_run.log).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "studio/http_util.h"
#include "studio/metrics_store.h"
#include "studio/root.h"

namespace trinity::studio {

class Runs {
 public:
  Runs(const Root& root, MetricsCache& metrics, std::string trinity_bin);
  ~Runs();  // stops watching children (they keep running)
  Runs(const Runs&) = delete;
  Runs& operator=(const Runs&) = delete;

  json list();  // {"runs": [...]}
  // The absolute job dir of run `id` (a path under the root); HttpError 404 when it is not a run.
  std::string run_dir(const std::string& id) const;
  json start(const std::string& config, const std::vector<std::string>& sets);
  json stop(const std::string& id);
  json resume(const std::string& id);
  json log(const std::string& id, int64_t tail);
  // Every run's id (discovery only).
  std::vector<std::string> ids() const;

 private:
  struct Child {
    int pid = 0;
    std::string log;                    // absolute
    std::vector<std::string> job_dirs;  // absolute, one per stage
    double started_at = 0;
    bool exited = false;
    int exit_code = 0;
  };
  json run_json(const std::string& dir);
  void reap();

  const Root& root_;
  MetricsCache& metrics_;
  std::string bin_;
  mutable std::mutex mu_;
  std::vector<Child> children_;
  bool stopping_ = false;
  std::thread reaper_;
};

}  // namespace trinity::studio
