// run_subprocess: runs a command as a child process (the `command_workflow` agents) and waits for it.
// The child is the leader of a new process group; a timeout or cancel sends SIGTERM to the whole group,
// then SIGKILL after a grace period, and the child is always reaped (never waitpid(-1), no zombies).
// Background processes do not outlive the command: once the child has exited, its group is SIGKILLed
// and output still in the pipes is drained for at most 1 s (a process that left the group with setsid
// and keeps the pipes open is cut off there). Thread-safe: no global state; SIGPIPE is blocked in the
// calling thread for the duration of the call (never ignored process-wide), and reset to the default
// in the child. Start failures are IoError; a non-zero exit, a timeout or a cancel are results.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trinity {

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
};

struct SubprocessResult {
  int exit_code = -1;  // exit status when it exited normally, else -1
  int signal = 0;      // terminating signal when killed by one
  bool timed_out = false, cancelled = false;
  double seconds = 0;  // wall time from start to reaping
  // "exited with status 1", "killed by signal 9 (SIGKILL)", "timed out after 3 s, killed by signal 15 (SIGTERM)"
  std::string describe() const;
};

// Runs the command to completion, blocking the calling thread; callbacks run on this thread. Throws
// ValueError for an empty argv, IoError when it cannot be started (no such executable: the message names
// argv[0] and the cwd; not executable; missing cwd; spawn failure). An exception thrown by a callback
// kills the group, reaps the child and propagates.
SubprocessResult run_subprocess(const SubprocessOptions& opts);

}  // namespace trinity
