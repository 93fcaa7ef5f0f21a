// Run status files (run_status.h).
#include "launcher/run_status.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "core/log.h"

namespace trinity::launcher {

namespace {

using json = nlohmann::json;

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string this_host() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

int64_t process_start_time(int64_t pid) {
  if (pid <= 0) return 0;
  std::string stat;
  try {
    stat = file::read_all("/proc/" + std::to_string(pid) + "/stat");
  } catch (...) {
    return 0;
  }
  // pid (comm) state ppid ... : comm may hold spaces and parentheses; fields restart after the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  size_t pos = close + 2;
  for (int field = 3; field < 22 && pos < stat.size(); ++field) {
    pos = stat.find(' ', pos);
    if (pos == std::string::npos) return 0;
    ++pos;
  }
  return std::strtoll(stat.c_str() + pos, nullptr, 10);
}

bool run_process_alive(const RunStatus& s) {
  if (s.pid <= 0 || (!s.host.empty() && s.host != this_host())) return false;
  const int64_t start = process_start_time(s.pid);
  if (start == 0) return false;
  return s.pid_start == 0 || s.pid_start == start;
}

std::string run_status_to_json(const RunStatus& s) {
  json j = {{"state", s.state},
            {"pid", s.pid},
            {"pid_start", s.pid_start},
            {"host", s.host},
            {"mode", s.mode},
            {"project", s.project},
            {"name", s.name},
            {"stage", s.stage},
            {"config", s.config},
            {"set", s.sets},
            {"cwd", s.cwd},
            {"started_at", s.started_at},
            {"updated_at", s.updated_at},
            {"trinity_version", s.version}};
  j["ended_at"] = s.ended_at ? json(*s.ended_at) : json(nullptr);
  j["error"] = s.error.empty() ? json(nullptr) : json(s.error);
  return j.dump(1, ' ', false, json::error_handler_t::replace);
}

std::optional<RunStatus> read_run_status(const std::string& job_dir) {
  const std::string path = file::join(job_dir, kRunStatusFile);
  std::string text;
  try {
    if (!file::exists(path)) return std::nullopt;
    text = file::read_all(path);
  } catch (...) {
    return std::nullopt;
  }
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("state") || !j["state"].is_string()) return std::nullopt;
  RunStatus s;
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; };
  auto num = [&](const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0; };
  s.state = str("state");
  s.pid = static_cast<int64_t>(num("pid"));
  s.pid_start = static_cast<int64_t>(num("pid_start"));
  s.host = str("host"), s.mode = str("mode"), s.project = str("project"), s.name = str("name");
  s.stage = str("stage"), s.config = str("config"), s.cwd = str("cwd"), s.error = str("error");
  s.version = str("trinity_version");
  if (j.contains("set") && j["set"].is_array())
    for (const auto& v : j["set"])
      if (v.is_string()) s.sets.push_back(v.get<std::string>());
  s.started_at = num("started_at");
  s.updated_at = num("updated_at");
  if (j.contains("ended_at") && j["ended_at"].is_number()) s.ended_at = j["ended_at"].get<double>();
  return s;
}

RunStatusWriter::RunStatusWriter(std::string job_dir, RunStatus initial)
    : path_(file::join(job_dir, kRunStatusFile)), s_(std::move(initial)) {
  s_.state = "running";
  s_.pid = static_cast<int64_t>(getpid());
  s_.pid_start = process_start_time(s_.pid);
  s_.host = this_host();
  s_.started_at = s_.updated_at = wall_now();
  {
    std::lock_guard<std::mutex> l(mu_);
    write_locked();
  }
  beat_ = std::thread([this] {
    std::unique_lock<std::mutex> l(mu_);
    while (!done_) {
      cv_.wait_for(l, std::chrono::duration<double>(kRunStatusHeartbeatSeconds));
      if (done_) break;
      s_.updated_at = wall_now();
      write_locked();
    }
  });
}

RunStatusWriter::~RunStatusWriter() {
  bool finished;
  {
    std::lock_guard<std::mutex> l(mu_);
    finished = done_;
  }
  if (!finished) finish("failed", "the stage ended without a final status (an error; see the run's log)");
  if (beat_.joinable()) beat_.join();
}

void RunStatusWriter::finish(const std::string& state, const std::string& error) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (done_) return;
    done_ = true;
    s_.state = state;
    s_.error = error;
    s_.updated_at = wall_now();
    s_.ended_at = s_.updated_at;
    write_locked();
  }
  cv_.notify_all();
}

void RunStatusWriter::write_locked() {
  try {
    file::write_atomic(path_, run_status_to_json(s_));
  } catch (const std::exception& e) {  // a status file must never fail the run
    log::warn("could not write ", path_, ": ", e.what());
  }
}

}  // namespace trinity::launcher
