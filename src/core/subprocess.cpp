// run_subprocess (see subprocess.h): posix_spawn into a new process group, one poll() loop over the
// stdout / stderr / stdin pipes (all non-blocking in the parent, close-on-exec) and a pidfd, a group
// kill on timeout / cancel / exit, waitpid(pid) to reap. posix_spawn rather than fork: glibc spawns
// with clone(CLONE_VM|CLONE_VFORK), so a large trainer process is not copied page table by page table,
// and an exec failure comes back as its return value. The exit is seen with waitid(WNOWAIT) first so the
// zombie still holds the pid (and so the pgid) while the group is SIGKILLed; only then it is reaped.
// Sandboxed children (limits, uid, namespaces) are forked instead: the child runs only async-signal-safe
// calls on data prepared before fork() and reports a failed step (or the namespace outcome) over a
// close-on-exec status pipe, which reads EOF once exec succeeded.
#include "core/subprocess.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace trinity {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunk = 64 * 1024;  // bytes per read / write call
constexpr double kDrainS = 1.0;       // how long output is drained after the child exited

std::string err_text(int e) {
  char buf[128];
  return strerror_r(e, buf, sizeof buf);  // GNU variant: returns the message
}

struct Fd {  // an owned file descriptor, -1 when closed
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd; }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

// A close-on-exec pipe with both ends >= 3, so the child's dup2 onto 0/1/2 never clobbers another end.
struct Pipe {
  Fd r, w;
  Pipe() {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw IoError("subprocess", strcat("cannot create a pipe: ", err_text(errno)));
    for (int i = 0; i < 2; ++i) {
      if (p[i] >= 3) continue;
      const int moved = fcntl(p[i], F_DUPFD_CLOEXEC, 3);
      close(p[i]);
      p[i] = moved;
    }
    r.fd = p[0], w.fd = p[1];
    if (p[0] < 0 || p[1] < 0) throw IoError("subprocess", strcat("cannot create a pipe: ", err_text(errno)));
  }
};

// A write to a pipe whose reader is gone raises SIGPIPE in the writing thread. Block it in this thread
// only (a process-wide SIG_IGN belongs to whoever owns main) and discard one that became pending.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&set_), sigaddset(&set_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~SigpipeBlock() {
    sigset_t pending;
    sigpending(&pending);
    const timespec zero{};
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) sigtimedwait(&set_, nullptr, &zero);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t set_{}, old_{};
  bool was_pending_ = false;
};

// The spawned child; an exception on the way out (a throwing callback) still kills the group and reaps.
struct Child {
  pid_t pid = -1;
  int status = 0;
  bool reaped = false;
  ~Child() {
    if (pid > 0 && !reaped) reap();
  }
  bool exited() const {  // without reaping: the zombie keeps the pid and pgid reserved
    siginfo_t si{};
    return waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
  }
  void reap() {
    kill(-pid, SIGKILL);  // background processes do not outlive the command
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    reaped = true;
  }
};

// Splits a stream into lines for `cb`; a line over `max` bytes is cut to `max` and the rest dropped.
class LineSplitter {
 public:
  LineSplitter(const std::function<void(std::string_view)>& cb, size_t max) : cb_(cb), max_(max) {}
  void feed(const char* p, size_t n) {
    if (!cb_) return;
    while (n > 0) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
      const size_t len = nl ? static_cast<size_t>(nl - p) : n;
      if (nl && !partial_) {
        cb_(std::string_view(p, std::min(len, max_)));  // whole line in the buffer: no copy
      } else {
        pending_.append(p, std::min(len, max_ - pending_.size()));
        partial_ = true;
        if (nl) finish();
      }
      const size_t used = nl ? len + 1 : n;
      p += used, n -= used;
    }
  }
  void finish() {  // delivers a pending unterminated line; idempotent
    if (!partial_) return;
    partial_ = false;
    std::string line;
    line.swap(pending_);
    cb_(line);
  }

 private:
  const std::function<void(std::string_view)>& cb_;
  size_t max_;
  std::string pending_;  // at most max_ bytes
  bool partial_ = false;
};

// Finds `name` in `path` like execvp; returns the candidate as exec will see it after chdir(cwd).
std::string find_in_path(const std::string& name, const std::string& path, const std::string& cwd, bool& noexec) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end > start ? path.substr(start, end - start) : ".";
    const std::string cand = dir + "/" + name;
    const std::string probe = cand[0] != '/' && !cwd.empty() ? cwd + "/" + cand : cand;
    struct stat st {};
    if (stat(probe.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(probe.c_str(), X_OK) == 0) return cand;
      noexec = true;
    }
    start = end + 1;
  }
  return "";
}

// Records the child writes to the status pipe.
struct StatusRecord {
  char tag;   // 'N' network namespace granted, 'n' refused, 'E' a step failed (then _exit(127))
  char step;  // index into kSteps
  int error;  // errno
};
constexpr const char* kSteps[] = {"setpgid",   "dup2",      "chdir",     "setgroups",
                                  "setresgid", "setresuid", "setrlimit", "exec"};

struct ForkPlan {  // everything the forked child touches, built before fork()
  const char* program;
  char** argv;
  char** envp;
  const char* cwd;  // nullptr = inherit
  int in, out, err, status;
  const SubprocessOptions* opts;
};

void report(int fd, char tag, char step, int error) {
  const StatusRecord r{tag, step, error};
  while (write(fd, &r, sizeof r) < 0 && errno == EINTR) {
  }
}

[[noreturn]] void fail_step(int fd, int step) {
  report(fd, 'E', static_cast<char>(step), errno);
  _exit(127);
}

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void child_exec(const ForkPlan& p) {
  const SubprocessOptions& o = *p.opts;
  if (setpgid(0, 0) != 0) fail_step(p.status, 0);
  if (dup2(p.in, 0) < 0 || dup2(p.out, 1) < 0 || dup2(p.err, 2) < 0) fail_step(p.status, 1);
  sigset_t none;
  sigemptyset(&none);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGXCPU, SIGXFSZ}) sigaction(sig, &dfl, nullptr);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (p.cwd && chdir(p.cwd) != 0) fail_step(p.status, 2);
  if (o.run_as_gid >= 0) {
    if (setgroups(0, nullptr) != 0) fail_step(p.status, 3);
    const auto g = static_cast<gid_t>(o.run_as_gid);
    if (setresgid(g, g, g) != 0) fail_step(p.status, 4);
  }
  if (o.run_as_uid >= 0) {
    const auto u = static_cast<uid_t>(o.run_as_uid);
    if (setresuid(u, u, u) != 0) fail_step(p.status, 5);
  }
  if (o.new_net_namespace) {
    const bool ok = unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 || unshare(CLONE_NEWNET) == 0;
    report(p.status, ok ? 'N' : 'n', 0, ok ? 0 : errno);
  }
  for (const auto& r : o.rlimits) {
    rlimit lim{static_cast<rlim_t>(r.limit), static_cast<rlim_t>(r.limit)};
    if (r.resource == RLIMIT_CPU && lim.rlim_max != RLIM_INFINITY) lim.rlim_max += 1;
    if (setrlimit(r.resource, &lim) != 0) fail_step(p.status, 6);
  }
  // Nothing but stdio and the status pipe (close-on-exec) crosses into the sandbox.
  if (p.status > 3) syscall(SYS_close_range, 3u, static_cast<unsigned>(p.status - 1), 0u);
  syscall(SYS_close_range, static_cast<unsigned>(p.status + 1), ~0u, 0u);
  execve(p.program, p.argv, p.envp);
  fail_step(p.status, 7);
}

int ceil_ms(Clock::duration d) {
  const double ms = std::chrono::duration<double, std::milli>(d).count();
  return static_cast<int>(std::clamp(std::ceil(ms), 0.0, 100.0));
}

}  // namespace

std::string SubprocessResult::describe() const {
  const char* abbrev = signal != 0 ? sigabbrev_np(signal) : nullptr;
  const std::string how = signal != 0 ? strcat("killed by signal ", signal, abbrev ? strcat(" (SIG", abbrev, ")") : "")
                          : exit_code >= 0 ? strcat("exited with status ", exit_code)
                                           : "ended with an unknown status";
  if (!timed_out && !cancelled) return how;
  return strcat(timed_out ? "timed out" : "cancelled", " after ", std::round(seconds * 10) / 10, " s, ", how);
}

SubprocessResult run_subprocess(const SubprocessOptions& opts) {
  if (opts.argv.empty()) throw ValueError("subprocess", "argv is empty: expected at least the program name");
  const auto t0 = Clock::now();
  char here[4096];
  const std::string shown_cwd = !opts.cwd.empty() ? opts.cwd : getcwd(here, sizeof here) ? here : "?";
  if (!opts.cwd.empty()) {
    struct stat st {};
    if (stat(opts.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw IoError("subprocess", strcat("working directory '", opts.cwd, "' does not exist or is not a directory"));
  }

  // Everything the child needs is built here: the environment, the program path and the argv array.
  std::vector<std::string> env;
  std::string path = getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin";
  for (const auto& [k, v] : opts.env) {
    if (k.empty() || k.find('=') != std::string::npos)
      throw ValueError("subprocess", strcat("bad environment variable name '", k, "'"));
  }
  if (opts.clear_env) path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& [k, v] : opts.env)
    if (k == "PATH") path = v;
  for (char** e = opts.clear_env ? nullptr : environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const std::string_view key = kv.substr(0, kv.find('='));
    if (std::none_of(opts.env.begin(), opts.env.end(), [&](const auto& p) { return p.first == key; }))
      env.emplace_back(kv);
  }
  for (const auto& [k, v] : opts.env) env.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (const auto& s : opts.argv) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);

  const std::string& name = opts.argv[0];
  std::string program = name;
  if (name.find('/') == std::string::npos) {
    bool noexec = false;
    program = find_in_path(name, path, opts.cwd, noexec);
    if (program.empty())
      throw IoError("subprocess", strcat("cannot run '", name, "': ",
                                         noexec ? "found in PATH but not executable" : "no such executable in PATH",
                                         " (cwd '", shown_cwd, "')"));
  }

  SigpipeBlock sigpipe;
  Pipe in, out, err;
  Child child;
  SubprocessResult res;
  const bool sandboxed =
      !opts.rlimits.empty() || opts.run_as_uid >= 0 || opts.run_as_gid >= 0 || opts.new_net_namespace;
  if (sandboxed) {
    Pipe status;
    const ForkPlan plan{program.c_str(),
                        argv.data(),
                        envp.data(),
                        opts.cwd.empty() ? nullptr : opts.cwd.c_str(),
                        in.r.get(),
                        out.w.get(),
                        err.w.get(),
                        status.w.get(),
                        &opts};
    child.pid = fork();
    if (child.pid < 0) {
      child.pid = -1;
      throw IoError("subprocess", strcat("cannot run '", name, "': fork failed: ", err_text(errno)));
    }
    if (child.pid == 0) child_exec(plan);
    status.w.reset();
    StatusRecord r{};
    for (;;) {  // EOF once exec succeeded (or the child died)
      const ssize_t n = read(status.r.get(), &r, sizeof r);
      if (n < 0 && errno == EINTR) continue;
      if (n != static_cast<ssize_t>(sizeof r)) break;
      if (r.tag == 'N') res.network_isolated = true;
      if (r.tag == 'E') {
        child.reap();
        const int step = std::clamp<int>(r.step, 0, static_cast<int>(std::size(kSteps)) - 1);
        throw IoError("subprocess", strcat("cannot run '", name, "' as '", program, "' (cwd '", shown_cwd,
                                           "'): ", kSteps[step], " failed in the child: ", err_text(r.error)));
      }
    }
  } else {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, in.r.get(), 0);
    posix_spawn_file_actions_adddup2(&fa, out.w.get(), 1);
    posix_spawn_file_actions_adddup2(&fa, err.w.get(), 2);
    if (!opts.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, opts.cwd.c_str());
    sigset_t none, dflt;
    sigemptyset(&none), sigemptyset(&dflt), sigaddset(&dflt, SIGPIPE);  // SIGPIPE may be SIG_IGN here
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&at, 0);  // new group led by the child
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dflt);
    const int rc = posix_spawn(&child.pid, program.c_str(), &fa, &at, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
      child.pid = -1;
      const char* why = rc == ENOENT   ? " (the file or its #! interpreter is missing)"
                        : rc == EACCES ? " (not executable)"
                                       : "";
      throw IoError("subprocess", strcat("cannot run '", name, "' as '", program, "': ", err_text(rc), why, " (cwd '",
                                         shown_cwd, "')"));
    }
  }
  in.r.reset(), out.w.reset(), err.w.reset();
  for (int fd : {in.w.get(), out.r.get(), err.r.get()}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (opts.stdin_data.empty()) in.w.reset();
  Fd pidfd;  // readable once the child exits; without it (old kernel) the loop polls in 10 ms steps
  pidfd.fd = static_cast<int>(syscall(SYS_pidfd_open, child.pid, 0));

  LineSplitter split_out(opts.on_stdout_line, opts.max_line_bytes), split_err(opts.on_stderr_line, opts.max_line_bytes);
  const bool has_deadline = opts.timeout_s > 0;
  const auto secs = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const auto deadline = t0 + secs(opts.timeout_s);
  Clock::time_point kill_at{}, drain_until{};
  bool terminating = false, killed = false, exited = false;
  size_t written = 0;
  std::vector<char> buf(kChunk);
  for (;;) {
    const auto now = Clock::now();
    if (!exited && !terminating) {
      if (has_deadline && now >= deadline)
        res.timed_out = true;
      else if (opts.cancelled && opts.cancelled())
        res.cancelled = true;
      if (res.timed_out || res.cancelled) {
        kill(-child.pid, SIGTERM);
        terminating = true, kill_at = now + secs(opts.kill_grace_s);
      }
    }
    if (!exited && terminating && !killed && now >= kill_at) kill(-child.pid, SIGKILL), killed = true;
    if (!exited && child.exited()) {
      child.reap();
      exited = true, drain_until = now + secs(kDrainS);
      in.w.reset();
    }
    if (exited && ((out.r.get() < 0 && err.r.get() < 0) || now >= drain_until)) break;

    pollfd fds[4];
    nfds_t n = 0;
    for (int fd : {out.r.get(), err.r.get()})
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    if (in.w.get() >= 0) fds[n++] = {in.w.get(), POLLOUT, 0};
    if (pidfd.get() >= 0 && !exited) fds[n++] = {pidfd.get(), POLLIN, 0};
    int ms = pidfd.get() >= 0 || exited ? 100 : 10;
    if (has_deadline && !terminating) ms = std::min(ms, ceil_ms(deadline - now));
    if (terminating && !killed) ms = std::min(ms, ceil_ms(kill_at - now));
    if (exited) ms = std::min(ms, ceil_ms(drain_until - now));
    if (poll(fds, n, ms) < 0 && errno != EINTR) throw IoError("subprocess", strcat("poll failed: ", err_text(errno)));

    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0 || fds[i].fd == pidfd.get()) continue;
      if (fds[i].fd == in.w.get()) {
        const size_t left = std::min(opts.stdin_data.size() - written, kChunk);
        const ssize_t w = write(in.w.get(), opts.stdin_data.data() + written, left);
        if (w > 0) written += static_cast<size_t>(w);
        if (written == opts.stdin_data.size() || (w < 0 && errno != EAGAIN && errno != EINTR))
          in.w.reset();  // EPIPE: child stopped reading
        continue;
      }
      const bool is_out = fds[i].fd == out.r.get();
      const ssize_t r = read(fds[i].fd, buf.data(), buf.size());
      if (r > 0) {
        const auto& raw = is_out ? opts.on_stdout_data : opts.on_stderr_data;
        if (raw) raw(std::string_view(buf.data(), static_cast<size_t>(r)));
        (is_out ? split_out : split_err).feed(buf.data(), static_cast<size_t>(r));
      }
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        (is_out ? split_out : split_err).finish();
        (is_out ? out.r : err.r).reset();
      }
    }
  }
  split_out.finish(), split_err.finish();  // lines cut off by the drain bound
  if (WIFEXITED(child.status)) res.exit_code = WEXITSTATUS(child.status);
  if (WIFSIGNALED(child.status)) res.signal = WTERMSIG(child.status);
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace trinity
