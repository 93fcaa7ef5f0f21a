// Monitor: JSONL metric lines (one write() per line on an O_APPEND fd) plus optional TensorBoard
// event files. See monitor.h for the file layout and guarantees.
#include "monitor/monitor.h"

#include <fcntl.h>
#include <sys/file.h>
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

// flock(2) on a descriptor for the scope: appends and resume()'s rewrite of a file shared by the
// roles of a job (threads with their own descriptors, or other processes) exclude each other.
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() { ::flock(fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

void locked_append(int fd, const std::string& line, const std::string& path) {
  FileLock lock(fd);
  write_all(fd, line, path);
}

std::string read_fd(int fd, const std::string& path) {
  std::string out;
  char buf[1 << 16];
  for (off_t off = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError("monitor", strcat("cannot read ", path, ": ", std::strerror(errno)));
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    off += n;
  }
}

// Replaces the content of `fd` (same inode: other writers' O_APPEND descriptors stay valid).
void overwrite(int fd, const std::string& content, const std::string& path) {
  if (::ftruncate(fd, 0) != 0) throw IoError("monitor", strcat("cannot truncate ", path, ": ", std::strerror(errno)));
  size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::pwrite(fd, content.data() + off, content.size() - off, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError("monitor", strcat("cannot write ", path, ": ", std::strerror(errno)));
    off += static_cast<size_t>(n);
  }
  ::fsync(fd);
}

// Drops the lines of `role` with step >= from_step from the JSONL file at `path`. The filtered text
// is first saved beside it (<path>.resume): a kill during the in-place rewrite is repaired from that
// copy by the next Monitor (finish_interrupted_rewrite). Lines that do not parse are kept.
int64_t drop_superseded(const std::string& path, const std::string& role, int64_t from_step) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return 0;
  int64_t dropped = 0;
  try {
    FileLock lock(fd);
    const std::string text = read_fd(fd, path);
    std::string kept;
    kept.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
      size_t end = text.find('\n', pos);
      end = end == std::string::npos ? text.size() : end + 1;
      const std::string_view line(text.data() + pos, end - pos);
      pos = end;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.value("role", "") == role && j.contains("step") && j["step"].is_number_integer() &&
          j["step"].get<int64_t>() >= from_step) {
        ++dropped;
        continue;
      }
      kept.append(line);
    }
    if (dropped > 0) {
      const std::string backup = path + ".resume";
      file::write_atomic(backup, kept);
      overwrite(fd, kept, path);
      ::unlink(backup.c_str());
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return dropped;
}

// A rewrite killed between saving <path>.resume and removing it: put the filtered text in place.
void finish_interrupted_rewrite(const std::string& path) {
  const std::string backup = path + ".resume";
  if (!file::exists(backup)) return;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError("monitor", strcat("cannot open ", path, ": ", std::strerror(errno)));
  {
    FileLock lock(fd);
    if (file::exists(backup)) {
      overwrite(fd, file::read_all(backup), path);
      ::unlink(backup.c_str());
    }
  }
  ::close(fd);
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
  finish_interrupted_rewrite(metrics_path_);
  finish_interrupted_rewrite(examples_path_);
  metrics_fd_ = open_append(metrics_path_);
  if (type_ == MonitorType::kTensorboard)
    events_ = std::make_unique<EventFileWriter>(file::join(file::join(dir, "tensorboard"), role_));
}

Monitor::~Monitor() {
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
  if (examples_fd_ >= 0) ::close(examples_fd_);
}

std::string Monitor::event_file_path() const { return events_ ? events_->path() : std::string(); }

int64_t Monitor::resume(int64_t from_step) {
  if (type_ == MonitorType::kNone) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t n =
      drop_superseded(metrics_path_, role_, from_step) + drop_superseded(examples_path_, role_, from_step);
  if (events_) events_->write_event(event_session_start(unix_seconds(), from_step));
  return n;
}

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
  locked_append(metrics_fd_, line, metrics_path_);
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
  locked_append(examples_fd_, line, examples_path_);
  if (events_) events_->write_event(event);
}

}  // namespace trinity::monitor
