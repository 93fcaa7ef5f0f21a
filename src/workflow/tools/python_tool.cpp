// execute_python_code (see python_tool.h): temp dir, sandboxed run_subprocess, bounded capture.
#include "workflow/tools/python_tool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "core/json_limits.h"
#include "core/subprocess.h"
#include "tokenizer/unicode.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr int64_t kNobody = 65534;

// Keeps the first `limit` bytes of a stream and counts the rest.
struct Capture {
  explicit Capture(size_t max) : limit(max) {}
  size_t limit;
  std::string text;
  size_t dropped = 0;
  void add(std::string_view chunk) {
    const size_t take = std::min(chunk.size(), limit - std::min(limit, text.size()));
    text.append(chunk.substr(0, take));
    dropped += chunk.size() - take;
  }
  std::string finish() const {
    std::string s = tok::uni::lossy_utf8(text);
    if (dropped > 0) s += strcat("\n... [truncated ", dropped, " bytes]");
    return s;
  }
};

// A fresh private directory, removed (with everything the code left in it) on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& root) {
    std::string tmpl = (root.empty() ? fs::temp_directory_path().string() : root) + "/trinity-py-XXXXXX";
    if (!mkdtemp(tmpl.data()))
      throw IoError("tool", strcat("python: cannot create a temp dir under '", tmpl.substr(0, tmpl.size() - 18),
                                   "': ", std::strerror(errno)));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

void validate(const PythonToolOptions& o) {
  if (!(o.timeout_s > 0) || !std::isfinite(o.timeout_s))
    throw ConfigError("tool", strcat("python: timeout must be > 0 seconds, got ", o.timeout_s));
  if (!(o.cpu_s >= 0) || !std::isfinite(o.cpu_s))
    throw ConfigError("tool", strcat("python: cpu_s must be >= 0 seconds (0 = the timeout), got ", o.cpu_s));
  if (o.memory_bytes < (64ull << 20))
    throw ConfigError(
        "tool", strcat("python: memory_bytes must be >= 64 MiB (the interpreter needs it), got ", o.memory_bytes));
  if (o.max_processes < 1) throw ConfigError("tool", "python: max_processes must be >= 1, got 0");
  if (o.max_output_bytes < 1) throw ConfigError("tool", "python: max_output_bytes must be >= 1, got 0");
  if (access(o.python.c_str(), X_OK) != 0)
    throw ConfigError("tool", strcat("python: interpreter '", o.python, "' is not an executable file"));
}

PythonTool::PythonTool(PythonToolOptions o) : opt_(std::move(o)) {
  validate(opt_);
}

std::string PythonTool::schema_json() const {
  const json params = {
      {"type", "object"},
      {"properties",
       {{"code", {{"type", "string"}, {"description", "The Python code to be executed."}}},
        {"timeout",
         {{"type", "number"}, {"description", "The maximum time (in seconds) allowed for the code to run."}}}}},
      {"required", {"code"}}};
  return json{{"type", "function"},
              {"function",
               {{"name", name()},
                {"description",
                 "Execute the given python code in a temporary file and capture the return code, standard output "
                 "and error. You must `print` the output to get the result; the temporary file is removed after "
                 "the run."},
                {"parameters", params}}}}
      .dump();
}

PythonRun PythonTool::run(const std::string& code) const {
  return run(code, opt_.timeout_s);
}

PythonRun PythonTool::run(const std::string& code, double timeout_s) const {
  TempDir dir(opt_.tmp_root);
  const bool drop = opt_.drop_root && geteuid() == 0;
  file::write_atomic(dir.path() + "/main.py", code);
  if (drop && chown(dir.path().c_str(), static_cast<uid_t>(kNobody), static_cast<gid_t>(kNobody)) != 0)
    throw IoError("tool",
                  strcat("python: cannot hand the temp dir '", dir.path(), "' to nobody: ", std::strerror(errno)));

  SubprocessOptions so;
  so.argv = {opt_.python, "main.py"};
  so.cwd = dir.path();
  so.clear_env = true;
  so.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
            {"HOME", dir.path()},
            {"LANG", "C.UTF-8"},
            {"PYTHONDONTWRITEBYTECODE", "1"}};
  so.timeout_s = timeout_s;
  so.kill_grace_s = 1.0;
  so.cancelled = opt_.cancelled;
  const double cpu = opt_.cpu_s > 0 ? opt_.cpu_s : timeout_s;
  so.rlimits = {{RLIMIT_CPU, static_cast<uint64_t>(std::ceil(cpu))},
                {RLIMIT_AS, opt_.memory_bytes},
                {RLIMIT_FSIZE, opt_.file_bytes},
                {RLIMIT_NPROC, opt_.max_processes},
                {RLIMIT_CORE, 0}};
  if (drop) so.run_as_uid = so.run_as_gid = kNobody;
  so.new_net_namespace = opt_.isolate_network;
  Capture out(opt_.max_output_bytes), err(opt_.max_output_bytes);
  so.on_stdout_data = [&](std::string_view c) { out.add(c); };
  so.on_stderr_data = [&](std::string_view c) { err.add(c); };

  const SubprocessResult r = run_subprocess(so);
  PythonRun pr;
  pr.exit_code = r.exit_code;
  pr.signal = r.signal;
  pr.timed_out = r.timed_out;
  pr.cancelled = r.cancelled;
  pr.network_isolated = r.network_isolated;
  pr.out = out.finish();
  pr.err = err.finish();
  pr.out_truncated = out.dropped;
  pr.err_truncated = err.dropped;
  pr.seconds = r.seconds;
  pr.how = r.describe();
  return pr;
}

ToolResult PythonTool::call(const std::string& arguments_json) {
  ToolResult res;
  json args;
  try {
    check_json_depth(arguments_json, "execute_python_code arguments", kMaxJsonDepth, "tool");
    args = json::parse(arguments_json);
  } catch (const std::exception& e) {
    res.error = true;
    res.text = strcat("Error: the arguments are not a JSON object: ", e.what());
    return res;
  }
  const auto code = args.is_object() ? args.find("code") : args.end();
  if (code == args.end() || !code->is_string()) {
    res.error = true;
    res.text = "Error: execute_python_code needs a string argument \"code\".";
    return res;
  }
  double timeout = opt_.timeout_s;
  if (const auto t = args.find("timeout"); t != args.end() && t->is_number() && t->get<double>() > 0)
    timeout = std::min(timeout, t->get<double>());
  const PythonRun r = run(code->get<std::string>(), timeout);
  std::string err = r.err;
  if (r.timed_out)
    err += strcat(err.empty() || err.back() == '\n' ? "" : "\n", "TimeoutError: the code ran longer than ", timeout,
                  " seconds and was killed.");
  else if (r.signal != 0 && r.err.empty())
    err = strcat("The process was ", r.how, ".");
  res.timed_out = r.timed_out;
  res.unisolated = opt_.isolate_network && !r.network_isolated;
  res.error = r.timed_out || r.exit_code != 0;
  res.text = strcat("<returncode>", r.exit_code, "</returncode><stdout>", r.out, "</stdout><stderr>", err, "</stderr>");
  return res;
}

}  // namespace trinity::workflow
