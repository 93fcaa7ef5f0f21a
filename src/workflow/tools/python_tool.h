// execute_python_code: runs model-written Python in a sandboxed child (run_subprocess): a fresh temp
// dir as cwd and HOME (removed afterwards), a minimal environment (PATH, HOME, LANG,
// PYTHONDONTWRITEBYTECODE: no inherited secrets), limits on CPU time, address space, file size and
// processes, a wall-clock timeout, and no network where the kernel allows a new user + network
// namespace (network_isolated says whether it did). Run as root, the child drops to nobody (65534):
// root is exempt from RLIMIT_NPROC. Inside the namespace the process limit counts only the
// sandbox's own processes. Output per stream is cut to max_output_bytes ("... [truncated N bytes]").
// The result text has agentscope's shape: <returncode>..</returncode><stdout>..</stdout><stderr>..</stderr>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "workflow/tools/tool.h"

namespace trinity::workflow {

struct PythonToolOptions {
  std::string python = "/usr/bin/python3";
  double timeout_s = 300;              // wall clock (agentscope's execute_python_code default)
  double cpu_s = 0;                    // RLIMIT_CPU seconds; 0 = timeout_s rounded up
  uint64_t memory_bytes = 2ull << 30;  // RLIMIT_AS
  uint64_t file_bytes = 64ull << 20;   // RLIMIT_FSIZE
  uint64_t max_processes = 64;         // RLIMIT_NPROC (threads count too)
  size_t max_output_bytes = 16384;     // per stream
  bool isolate_network = true;
  bool drop_root = true;            // when euid is 0, run as nobody
  std::string tmp_root;             // "" = std::filesystem::temp_directory_path()
  std::function<bool()> cancelled;  // polled while the code runs (the workflow's attempt was cancelled)
};

// ConfigError "[tool] python: <key> ..." naming a bad value (timeout <= 0, a missing interpreter, ...).
void validate(const PythonToolOptions& o);

struct PythonRun {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false, cancelled = false;
  bool network_isolated = false;
  std::string out, err;                         // lossy UTF-8, each cut to max_output_bytes plus the truncation marker
  size_t out_truncated = 0, err_truncated = 0;  // bytes dropped
  double seconds = 0;
  std::string how;  // SubprocessResult::describe()
};

class PythonTool : public Tool {
 public:
  explicit PythonTool(PythonToolOptions o = {});
  std::string name() const override { return "execute_python_code"; }
  std::string schema_json() const override;
  // {"code": "..."}; an optional "timeout" (seconds) may only shorten the configured one.
  ToolResult call(const std::string& arguments_json) override;
  // Runs `code` as main.py in a fresh temp dir. IoError when the sandbox cannot be set up.
  PythonRun run(const std::string& code) const;
  PythonRun run(const std::string& code, double timeout_s) const;
  const PythonToolOptions& options() const { return opt_; }

 private:
  PythonToolOptions opt_;
};

}  // namespace trinity::workflow
