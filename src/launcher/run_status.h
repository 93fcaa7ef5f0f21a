// Run status files (docs/studio.md): `<job_dir>/run_status.json`, written by the launcher for every
// stage it runs -- at start ("running"), every few seconds while running (updated_at), and at the end
// ("finished", "stopped" or "failed" with the error) -- always atomically. Studio (and any script)
// reads them to list runs, tell a live run from a killed one (pid + the process start time, so a
// reused pid is not mistaken for the run) and rerun a run with the config and --set it was started with.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace trinity::launcher {

// How a run was started (`trinity run --config X --set ...`): what a resume runs again.
struct RunOrigin {
  std::string config_path;  // absolute
  std::vector<std::string> sets;
  std::string cwd;
  std::string version;  // trinity --version of the binary
};

struct RunStatus {
  std::string state;  // running | finished | stopped | failed
  int64_t pid = 0;
  int64_t pid_start = 0;  // the process's start time (/proc/<pid>/stat field 22), 0 if unknown
  std::string host, mode, project, name, stage, config, cwd, error, version;
  std::vector<std::string> sets;
  double started_at = 0, updated_at = 0;
  std::optional<double> ended_at;
};

constexpr const char* kRunStatusFile = "run_status.json";
constexpr double kRunStatusHeartbeatSeconds = 5;

std::string run_status_to_json(const RunStatus& s);
// nullopt when the file is missing or not a status object.
std::optional<RunStatus> read_run_status(const std::string& job_dir);
// The start time of process `pid` (clock ticks since boot), 0 when there is no such process.
int64_t process_start_time(int64_t pid);
// True when `s` names a process of this host that is alive and is the same process (pid_start).
bool run_process_alive(const RunStatus& s);
std::string this_host();

// Writes the file of one stage for as long as it lives: "running" now and every
// kRunStatusHeartbeatSeconds; finish() writes the final state. Destroyed without finish() (an
// exception went through): "failed" with `pending_error`, or "ended without a final status".
class RunStatusWriter {
 public:
  RunStatusWriter(std::string job_dir, RunStatus initial);
  ~RunStatusWriter();
  RunStatusWriter(const RunStatusWriter&) = delete;
  RunStatusWriter& operator=(const RunStatusWriter&) = delete;
  void finish(const std::string& state, const std::string& error = "");

 private:
  void write_locked();
  std::string path_;
  RunStatus s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread beat_;
};

}  // namespace trinity::launcher
