// Monitor: per-role metric sink of a job. Every log() appends one JSON object per line to
// <job_dir>/monitor/metrics.jsonl ({"role","step","time",<metric>...}; non-finite values as null),
// in one write() on an O_APPEND descriptor, so explorer and trainer Monitors (threads or processes)
// can share the file without interleaving and a killed run keeps every line it logged (appends and
// resume()'s rewrite take an flock on the file, so a rewrite never loses another writer's line). With
// monitor_type "tensorboard" it also writes event files under <job_dir>/monitor/tensorboard/<role>/.
// Mirrors Trinity-RFT's monitor (one run per role; reference §2.10, metric names §8).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace trinity::monitor {

class EventFileWriter;

enum class MonitorType { kNone, kJsonl, kTensorboard };
// "none" | "jsonl" | "tensorboard"; anything else (wandb, mlflow, swanlab, ...) is a ConfigError.
MonitorType parse_monitor_type(const std::string& name);

class Monitor {
 public:
  // role: "explorer" | "trainer" | "bench" (ConfigError otherwise). kNone writes nothing at all.
  Monitor(std::string job_dir, std::string role, const std::string& monitor_type);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // Thread-safe. Metric names "role", "step", "time" are reserved (ValueError).
  void log(const std::map<std::string, double>& metrics, int64_t step);
  // Appends {"role","step","tag","text"} to <job_dir>/monitor/rollout_examples.jsonl (and a
  // TensorBoard text summary with tensorboard).
  void log_text(const std::string& tag, const std::string& text, int64_t step);

  // A resumed run logs steps >= from_step again: drops this role's lines with step >= from_step from
  // metrics.jsonl and rollout_examples.jsonl (other roles' lines are kept), and writes TensorBoard's
  // restart marker (SessionLog START at from_step) so its points of earlier event files are dropped
  // too. Call before this run's first log(). Returns the number of lines dropped.
  int64_t resume(int64_t from_step);

  MonitorType type() const { return type_; }
  const std::string& role() const { return role_; }
  const std::string& metrics_path() const { return metrics_path_; }
  const std::string& examples_path() const { return examples_path_; }
  // The event file; empty unless monitor_type is tensorboard.
  std::string event_file_path() const;

 private:
  std::string job_dir_, role_;
  MonitorType type_;
  std::string metrics_path_, examples_path_;
  std::mutex mu_;
  int metrics_fd_ = -1;
  int examples_fd_ = -1;  // opened on first log_text
  std::unique_ptr<EventFileWriter> events_;
};

}  // namespace trinity::monitor
