// run_subprocess: runs a command as a child process (the `command_workflow` agents) and waits for it.
// The child is the leader of a new process group; a timeout or cancel sends SIGTERM to the whole group,
// then SIGKILL after a grace period, and the child is always reaped (never waitpid(-1), no zombies).
// Background processes do not outlive the command: once the child has exited, its group is SIGKILLed
// and output still in the pipes is drained for at most 1 s (a process that left the group with setsid
// and keeps the pipes open is cut off there). Thread-safe: no global state; SIGPIPE is blocked in the
// calling thread for the duration of the call (never ignored process-wide), and reset to the default
// in the child. Start failures are IoError; a non-zero exit, a timeout or a cancel are results.
// Sandbox options (the python tool): a cleared environment, resource limits, another uid and a fresh
// user + network namespace; limits, uid and namespace need code in the child, so with any of them the
// child starts by fork + exec (all other descriptors closed) instead of posix_spawn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trinity {

// setrlimit(resource, {limit, limit}) in the child; RLIMIT_CPU gets hard = soft + 1 so that SIGXCPU
// (catchable) comes a second before SIGKILL.
struct SubprocessRlimit {
  int resource = 0;  // RLIMIT_*
  uint64_t limit = 0;
};

struct SubprocessOptions {
  std::vector<std::string> argv;  // argv[0] looked up in PATH (of `env`) if it has no '/', else relative to cwd
  std::string cwd;                // "" = inherit
  std::vector<std::pair<std::string, std::string>> env;  // added to / overriding the parent's environment
  std::string stdin_data;  // written to the child's stdin from the poll loop, then stdin is closed (EPIPE ignored)
  double timeout_s = 0;    // seconds, 0 = none; on expiry: SIGTERM to the group, SIGKILL after kill_grace_s
  double kill_grace_s = 2.0;
  std::function<bool()> cancelled;  // polled at least every 100 ms; true -> kill the group like a timeout
  std::function<void(std::string_view line)> on_stdout_line;  // each line without '\n'; also a final unterminated one
  std::function<void(std::string_view line)> on_stderr_line;  // no callback: the stream is read and discarded
  size_t max_line_bytes = 1 << 20;  // longer lines are delivered cut to this many bytes (rest of the line dropped)
  std::function<void(std::string_view chunk)> on_stdout_data;  // raw bytes as read (besides the line callbacks)
  std::function<void(std::string_view chunk)> on_stderr_data;

  // Sandbox (see the file comment). clear_env: the child's environment is exactly `env`.
  bool clear_env = false;
  std::vector<SubprocessRlimit> rlimits;
  int64_t run_as_uid = -1, run_as_gid = -1;  // -1 = unchanged; else setgroups({}) + setresgid/setresuid
  // unshare(CLONE_NEWUSER | CLONE_NEWNET) in the child (only a down loopback: no network). Where the
  // kernel refuses, the command still runs and SubprocessResult::network_isolated says false.
  bool new_net_namespace = false;
};

struct SubprocessResult {
  int exit_code = -1;  // exit status when it exited normally, else -1
  int signal = 0;      // terminating signal when killed by one
  bool timed_out = false, cancelled = false;
  double seconds = 0;             // wall time from start to reaping
  bool network_isolated = false;  // new_net_namespace was asked for and the kernel granted it
  // "exited with status 1", "killed by signal 9 (SIGKILL)", "timed out after 3 s, killed by signal 15 (SIGTERM)"
  std::string describe() const;
};

// Runs the command to completion, blocking the calling thread; callbacks run on this thread. Throws
// ValueError for an empty argv, IoError when it cannot be started (no such executable: the message names
// argv[0] and the cwd; not executable; missing cwd; spawn failure; a sandbox step that failed in the
// child, named: setresuid, setrlimit, ...). An exception thrown by a callback
// kills the group, reaps the child and propagates.
SubprocessResult run_subprocess(const SubprocessOptions& opts);

}  // namespace trinity
