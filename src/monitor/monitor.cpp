// Monitor: JSONL metric lines (one write() per line on an O_APPEND fd) plus optional TensorBoard
// event files. See monitor.h for the file layout and guarantees.
#include "monitor/monitor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "monitor/fd_io.h"
#include "monitor/tfevents.h"

namespace trinity::monitor {
namespace {

int open_append(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError("monitor", strcat("cannot open ", path, " for append: ", std::strerror(errno)));
  return fd;
}

}  // namespace

MonitorType parse_monitor_type(const std::string& name) {
  if (name == "none") return MonitorType::kNone;
  if (name == "jsonl") return MonitorType::kJsonl;
  if (name == "tensorboard") return MonitorType::kTensorboard;
  throw ConfigError("monitor", strcat("monitor.monitor_type '", name,
                                      "' is not supported; expected tensorboard, jsonl or none"));
}

Monitor::Monitor(std::string job_dir, std::string role, const std::string& monitor_type)
    : job_dir_(std::move(job_dir)), role_(std::move(role)), type_(parse_monitor_type(monitor_type)) {
  if (role_ != "explorer" && role_ != "trainer" && role_ != "bench")
    throw ConfigError("monitor", strcat("role '", role_, "' is not one of explorer, trainer, bench"));
  const std::string dir = file::join(job_dir_, "monitor");
  metrics_path_ = file::join(dir, "metrics.jsonl");
  examples_path_ = file::join(dir, "rollout_examples.jsonl");
  if (type_ == MonitorType::kNone) return;
  file::make_dirs(dir);
  metrics_fd_ = open_append(metrics_path_);
  if (type_ == MonitorType::kTensorboard)
    events_ = std::make_unique<EventFileWriter>(file::join(file::join(dir, "tensorboard"), role_));
}

Monitor::~Monitor() {
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
  if (examples_fd_ >= 0) ::close(examples_fd_);
}

std::string Monitor::event_file_path() const { return events_ ? events_->path() : std::string(); }

void Monitor::log(const std::map<std::string, double>& metrics, int64_t step) {
  if (type_ == MonitorType::kNone) return;
  for (const char* reserved : {"role", "step", "time"})
    if (metrics.count(reserved))
      throw ValueError("monitor", strcat("metric name '", reserved, "' is reserved for the record header"));
  const double now = unix_seconds();
  nlohmann::ordered_json j;
  j["role"] = role_;
  j["step"] = step;
  j["time"] = now;
  for (const auto& [k, v] : metrics) j[k] = std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr;
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::string event;
  if (events_) event = event_scalars(now, step, metrics);
  std::lock_guard<std::mutex> lock(mu_);
  write_all(metrics_fd_, line, metrics_path_);
  if (events_) events_->write_event(event);
}

void Monitor::log_text(const std::string& tag, const std::string& text, int64_t step) {
  if (type_ == MonitorType::kNone) return;
  nlohmann::ordered_json j;
  j["role"] = role_;
  j["step"] = step;
  j["tag"] = tag;
  j["text"] = text;
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::string event;
  if (events_) event = event_text(unix_seconds(), step, tag, text);
  std::lock_guard<std::mutex> lock(mu_);
  if (examples_fd_ < 0) examples_fd_ = open_append(examples_path_);
  write_all(examples_fd_, line, examples_path_);
  if (events_) events_->write_event(event);
}

}  // namespace trinity::monitor
