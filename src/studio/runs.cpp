// Run discovery, state and child processes (runs.h).
#include "studio/runs.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "config/config.h"
#include "core/error.h"
#include "core/file.h"
#include "launcher/run_status.h"

extern char** environ;

namespace trinity::studio {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLogName = "studio_run.log";
constexpr int kMaxDepth = 6;

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool is_run_dir(const fs::path& d) {
  std::error_code ec;
  return fs::exists(d / launcher::kRunStatusFile, ec) || fs::exists(d / "monitor" / "metrics.jsonl", ec);
}

// The job dirs under the root: a folder that is a run is listed and not entered; checkpoint
// internals and build trees are not entered.
std::vector<std::string> discover(const Root& root) {
  std::vector<std::string> out;
  root.walk(
      [&](const fs::path& p, bool is_dir) {
        if (!is_dir) return false;
        const std::string n = p.filename().string();
        if (n.starts_with("global_step_") || n == "monitor" || n == "huggingface" || n == "tensorboard" ||
            n == "buffer" || n == "CMakeFiles")
          return false;
        if (!is_run_dir(p)) return true;
        out.push_back(p.string());
        return false;
      },
      kMaxDepth);
  return out;
}

// The last `max_lines` lines of a text file (reads at most its last 256 KiB).
std::vector<std::string> tail_lines(const std::string& path, int64_t max_lines) {
  std::vector<std::string> out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const off_t from = std::max<off_t>(0, size - (off_t{256} << 10));
  std::string buf(static_cast<size_t>(size - from), '\0');
  const ssize_t got = ::pread(fd, buf.data(), buf.size(), from);
  ::close(fd);
  buf.resize(got > 0 ? static_cast<size_t>(got) : 0);
  size_t pos = 0;
  if (from > 0) pos = buf.find('\n') == std::string::npos ? buf.size() : buf.find('\n') + 1;  // a partial first line
  while (pos < buf.size()) {
    size_t nl = buf.find('\n', pos);
    if (nl == std::string::npos) nl = buf.size();
    out.push_back(buf.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (static_cast<int64_t>(out.size()) > max_lines) out.erase(out.begin(), out.end() - max_lines);
  return out;
}

// The metric that stands for "reward" in a run's list row.
std::string reward_series(const std::vector<std::string>& names) {
  for (const char* k : {"explorer:rollout/reward/mean", "trainer:critic/score/mean", "trainer:critic/rewards/mean"})
    if (std::find(names.begin(), names.end(), k) != names.end()) return k;
  for (const auto& n : names)
    if (n.ends_with("/reward/mean") || n.find("/reward/mean@") != std::string::npos) return n;
  return "";
}

json jnum(double x) {
  return std::isfinite(x) ? json(x) : json(nullptr);
}

}  // namespace

Runs::Runs(const Root& root, MetricsCache& metrics, std::string trinity_bin)
    : root_(root), metrics_(metrics), bin_(std::move(trinity_bin)) {
  reaper_ = std::thread([this] {
    while (true) {
      {
        std::lock_guard<std::mutex> l(mu_);
        if (stopping_) return;
      }
      reap();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
}

Runs::~Runs() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  reaper_.join();
}

void Runs::reap() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& c : children_) {
    if (c.exited) continue;
    int st = 0;
    const pid_t r = ::waitpid(c.pid, &st, WNOHANG);
    if (r == c.pid) {
      c.exited = true;
      c.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    } else if (r < 0 && errno == ECHILD) {
      c.exited = true;
      c.exit_code = -1;
    }
  }
}

std::vector<std::string> Runs::ids() const {
  std::vector<std::string> out;
  for (const auto& d : discover(root_)) out.push_back(root_.relative(d));
  std::sort(out.begin(), out.end());
  return out;
}

std::string Runs::run_dir(const std::string& id) const {
  const std::string abs = root_.resolve(id, "run");
  if (!is_run_dir(abs)) throw HttpError{404, strcat("no run '", id, "' under ", root_.dir()), "not_found", "run"};
  return abs;
}

json Runs::run_json(const std::string& dir) {
  json j;
  j["id"] = root_.relative(dir);
  const fs::path p(dir);
  const auto st = launcher::read_run_status(dir);
  std::string state = "unknown", error;
  if (st) {
    state = st->state;
    error = st->error;
    if (state == "running" && st->host == launcher::this_host() && !launcher::run_process_alive(*st)) {
      state = "failed";
      error = strcat("process ", st->pid, " is gone without a final status (killed?)");
    }
    j["project"] = st->project, j["name"] = st->name, j["stage"] = st->stage, j["mode"] = st->mode;
    j["pid"] = st->pid, j["host"] = st->host, j["config"] = st->config, j["set"] = st->sets;
    j["started_at"] = st->started_at, j["updated_at"] = st->updated_at;
    j["ended_at"] = st->ended_at ? json(*st->ended_at) : json(nullptr);
  } else {
    j["project"] = p.parent_path().filename().string(), j["name"] = p.filename().string(), j["stage"] = "";
    j["mode"] = nullptr, j["pid"] = nullptr, j["host"] = nullptr, j["config"] = nullptr, j["set"] = json::array();
    std::error_code ec;
    const auto mt = fs::last_write_time(p / "monitor" / "metrics.jsonl", ec);
    const double t =
        ec ? 0.0 : std::chrono::duration<double>(std::chrono::file_clock::to_sys(mt).time_since_epoch()).count();
    j["started_at"] = nullptr, j["updated_at"] = t, j["ended_at"] = nullptr;
  }
  bool child = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& c : children_)
      if (std::find(c.job_dirs.begin(), c.job_dirs.end(), dir) != c.job_dirs.end()) {
        child = true;
        if (c.exited && c.exit_code != 0 && state == "running" && st && st->pid == c.pid) {
          state = "failed";
          error = strcat("trinity run exited with code ", c.exit_code, "; see its log");
        }
      }
  }
  j["child"] = child;
  j["state"] = state;
  j["error"] = error.empty() ? json(nullptr) : json(error);
  json steps = json::object();
  j["last_reward"] = nullptr, j["last_reward_key"] = nullptr, j["metrics_lines"] = 0;
  const std::string mpath = (p / "monitor" / "metrics.jsonl").string();
  if (file::exists(mpath)) {
    try {
      auto f = metrics_.get(mpath);
      f->refresh();
      for (const auto& [role, s] : f->last_steps()) steps[role] = s;
      j["metrics_lines"] = f->lines();
      const std::string key = reward_series(f->series_names());
      if (!key.empty()) {
        const auto s = f->series({key}).front();
        for (size_t i = s.values.size(); i-- > 0;)
          if (std::isfinite(s.values[i])) {
            j["last_reward"] = jnum(s.values[i]);
            j["last_reward_key"] = key;
            break;
          }
      }
    } catch (const Error&) {  // unreadable metrics: the row still shows
    }
  }
  j["step"] = steps;
  return j;
}

json Runs::list() {
  const std::vector<std::string> dirs = discover(root_);
  json runs = json::array();
  for (const auto& d : dirs) runs.push_back(run_json(d));
  // Children whose job dir has no status yet: starting, or failed before the first stage began.
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& c : children_)
    for (const auto& d : c.job_dirs) {
      if (std::find(dirs.begin(), dirs.end(), d) != dirs.end() || !root_.contains(d)) continue;
      if (c.exited && c.exit_code == 0) continue;  // e.g. a stage skipped as already finished
      json j = {{"id", root_.relative(d)}, {"child", true},          {"pid", c.pid},      {"started_at", c.started_at},
                {"step", json::object()},  {"last_reward", nullptr}, {"metrics_lines", 0}};
      j["state"] = c.exited ? "failed" : "starting";
      j["error"] = c.exited ? json(strcat("trinity run exited with code ", c.exit_code,
                                          " before this stage started; see ", root_.relative(c.log)))
                            : json(nullptr);
      runs.push_back(j);
    }
  std::stable_sort(runs.begin(), runs.end(), [](const json& a, const json& b) {
    auto t = [](const json& x) {
      return x.contains("started_at") && x["started_at"].is_number() ? x["started_at"].get<double>() : 0.0;
    };
    return t(a) > t(b);
  });
  return {{"runs", runs}};
}

json Runs::start(const std::string& config, const std::vector<std::string>& sets) {
  const std::string abs = root_.resolve(config, "config");
  if (!file::exists(abs)) throw HttpError{404, strcat("no config file '", config, "'"), "not_found", "config"};
  if (!(abs.ends_with(".yaml") || abs.ends_with(".yml")))
    throw HttpError{400, strcat("'", config, "' is not a .yaml / .yml file"), "invalid_value", "config"};
  for (const auto& s : sets)
    if (s.find('=') == std::string::npos)
      throw HttpError{400, strcat("'set' entries are key=value, got '", s, "'"), "invalid_value", "set"};
  config::LoadResult r;
  try {
    r = config::load_config(abs, sets);
  } catch (const Error& e) {
    throw HttpError{400, e.what(), "invalid_config", "config"};
  }
  std::vector<std::string> job_dirs;
  if (r.stages.empty())
    job_dirs.push_back(fs::weakly_canonical(r.config.job_dir()).string());
  else
    for (const auto& s : r.stages) job_dirs.push_back(fs::weakly_canonical(s.job_dir()).string());
  for (const auto& d : job_dirs) {
    const auto st = launcher::read_run_status(d);
    if (st && st->state == "running" && launcher::run_process_alive(*st))
      throw HttpError{
          409,
          strcat("run ", root_.relative(d).empty() ? d : root_.relative(d), " is already running (pid ", st->pid, ")"),
          "conflict", "config"};
  }
  // A child of ours on the same job dirs that already wrote its final status may still be exiting
  // (saving, joining threads): give it a few seconds before calling it a conflict.
  for (int waited = 0;; ++waited) {
    reap();
    int busy = 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& c : children_)
        if (!c.exited && c.job_dirs == job_dirs) busy = c.pid;
    }
    if (busy == 0) break;
    if (waited >= 100)
      throw HttpError{409, strcat("this config is already running (pid ", busy, ")"), "conflict", "config"};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string log_dir = fs::weakly_canonical(r.config.job_dir()).string();
  file::make_dirs(log_dir);
  const std::string log_path = file::join(log_dir, kLogName);
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw HttpError{500, strcat("cannot open ", log_path, ": ", std::strerror(errno)), "io_error", ""};
  std::vector<std::string> args = {bin_, "run", "--config", abs};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  std::string header = "==== trinity studio: started";
  for (const auto& a : args) header += " " + a;
  header += " ====\n";
  [[maybe_unused]] const ssize_t wrote = ::write(fd, header.data(), header.size());  // the log's header only
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  posix_spawn_file_actions_adddup2(&fa, fd, 2);
  posix_spawn_file_actions_addchdir_np(&fa, root_.dir().c_str());
  posix_spawnattr_init(&at);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &defaults);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, bin_.c_str(), &fa, &at, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  ::close(fd);
  if (rc != 0) throw HttpError{500, strcat("cannot start ", bin_, ": ", std::strerror(rc)), "spawn_failed", ""};
  Child c;
  c.pid = pid, c.log = log_path, c.job_dirs = job_dirs, c.started_at = wall_now();
  json ids = json::array();
  for (const auto& d : job_dirs) ids.push_back(root_.relative(d).empty() ? d : root_.relative(d));
  {
    std::lock_guard<std::mutex> l(mu_);
    children_.push_back(std::move(c));
  }
  json out = {{"pid", pid}, {"runs", ids}, {"log", root_.relative(log_path)}};
  for (const auto& d : job_dirs)
    if (!root_.contains(d))
      out["warning"] = strcat("the job dir ", d, " is outside the studio root; the run will not be listed");
  return out;
}

json Runs::stop(const std::string& id) {
  const std::string dir = run_dir(id);
  const auto st = launcher::read_run_status(dir);
  if (!st || st->state != "running" || !launcher::run_process_alive(*st))
    throw HttpError{409, strcat("run '", id, "' is not running (on this host)"), "conflict", "run"};
  if (::kill(static_cast<pid_t>(st->pid), SIGINT) != 0)
    throw HttpError{500, strcat("cannot signal pid ", st->pid, ": ", std::strerror(errno)), "signal_failed", "run"};
  return {{"pid", st->pid}, {"signal", "SIGINT"}};
}

json Runs::resume(const std::string& id) {
  const std::string dir = run_dir(id);
  const auto st = launcher::read_run_status(dir);
  if (!st || st->config.empty())
    throw HttpError{409, strcat("run '", id, "' has no run_status.json naming its config; start it from its config"),
                    "conflict", "run"};
  if (st->state == "running" && launcher::run_process_alive(*st))
    throw HttpError{409, strcat("run '", id, "' is running"), "conflict", "run"};
  if (!file::exists(st->config))
    throw HttpError{404, strcat("the config of run '", id, "' is gone: ", st->config), "not_found", "run"};
  return start(st->config, st->sets);
}

json Runs::log(const std::string& id, int64_t tail) {
  const std::string dir = run_dir(id);
  for (const fs::path& p : {fs::path(dir) / kLogName, fs::path(dir).parent_path() / kLogName}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return {{"path", root_.relative(p.string())}, {"lines", tail_lines(p.string(), tail)}};
  }
  return {{"path", nullptr}, {"lines", json::array()}};
}

}  // namespace trinity::studio
