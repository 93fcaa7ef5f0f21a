// command_workflow: runs an agent command per run against a recording endpoint (see
// command_workflow.h).
#include "workflow/command_workflow.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/json_limits.h"
#include "core/log.h"
#include "core/subprocess.h"
#include "workflow/builtins.h"
#include "workflow/history.h"
#include "workflow/simple_workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxLogBytes = size_t{16} << 20;  // per run's log file
constexpr size_t kStderrTail = 5;                  // stderr lines quoted in a failure
constexpr size_t kMaxEnvTask = size_t{96} << 10;   // larger task rows go on stdin only

// A failed run; the message names the reason class the explorer counts.
class AgentError : public Error {
 public:
  AgentError(const std::string& reason, const std::string& msg) : Error("agent", reason + ": " + msg) {}
};

struct CommandArgs {
  std::vector<std::string> argv;
  double timeout = 0;
  std::vector<std::pair<std::string, std::string>> env;
};

CommandArgs parse_args(const buffer::Task& task) {
  const WorkflowArgs wa("command_workflow", task.workflow_args, {"command", "timeout", "env"});
  const json j = json::parse(wa.text);
  CommandArgs a;
  const auto cmd = j.find("command");
  if (cmd == j.end() || cmd->is_null())
    throw ConfigError("workflow",
                      "command_workflow: workflow_args.command is required (a list such as "
                      "[\"python3\", \"agent.py\"], run in the config file's directory)");
  if (cmd->is_string()) {
    a.argv = {"/bin/sh", "-c", cmd->get<std::string>()};
  } else if (cmd->is_array() && !cmd->empty()) {
    for (size_t i = 0; i < cmd->size(); ++i) {
      if (!(*cmd)[i].is_string())
        throw ConfigError("workflow", strcat("command_workflow: workflow_args.command[", i, "] must be a string, got ",
                                             (*cmd)[i].dump()));
      a.argv.push_back((*cmd)[i].get<std::string>());
    }
  } else {
    throw ConfigError("workflow", strcat("command_workflow: workflow_args.command must be a non-empty list of strings "
                                         "or a shell command string, got ",
                                         cmd->dump()));
  }
  a.timeout = wa.get_double("timeout", 0.0);
  if (!(a.timeout >= 0) || !std::isfinite(a.timeout))
    throw ConfigError("workflow",
                      strcat("command_workflow: workflow_args.timeout must be >= 0 seconds, got ", a.timeout));
  if (const auto env = j.find("env"); env != j.end() && !env->is_null()) {
    if (!env->is_object())
      throw ConfigError("workflow", "command_workflow: workflow_args.env must be an object of strings");
    for (const auto& [k, v] : env->items()) {
      if (k.empty() || k.find('=') != std::string::npos)
        throw ConfigError("workflow",
                          strcat("command_workflow: workflow_args.env key '", k, "' is not a variable name"));
      if (v.is_string())
        a.env.emplace_back(k, v.get<std::string>());
      else if (v.is_number() || v.is_boolean())
        a.env.emplace_back(k, v.dump());
      else
        throw ConfigError("workflow",
                          strcat("command_workflow: workflow_args.env.", k, " must be a string, got ", v.dump()));
    }
  }
  return a;
}

// The run's log file (bounded), or the log (info) when there is no log folder.
class RunLog {
 public:
  RunLog(const std::string& dir, const std::string& name) : name_(name) {
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    path_ = (std::filesystem::path(dir) / (name + ".log")).string();
    f_ = std::fopen(path_.c_str(), "w");
    if (!f_) log::warn("command_workflow: cannot write ", path_, "; the agent's output goes to the log");
  }
  ~RunLog() {
    if (f_) std::fclose(f_);
  }
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;
  void line(std::string_view stream, std::string_view text) {
    std::lock_guard<std::mutex> l(mu_);
    if (!f_) {  // no log folder (trinity debug workflow): the agent's output is shown as it comes
      log::info("agent ", name_, " ", stream, ": ", text);
      return;
    }
    if (written_ >= kMaxLogBytes) return;
    if (written_ + text.size() + 1 > kMaxLogBytes) {
      std::fputs("[trinity] log truncated at 16 MiB\n", f_);
      written_ = kMaxLogBytes;
      return;
    }
    if (stream == "stderr") std::fputs("stderr| ", f_);
    std::fwrite(text.data(), 1, text.size(), f_);
    std::fputc('\n', f_);
    written_ += text.size() + 1;
  }
  const std::string& path() const { return path_; }

 private:
  std::mutex mu_;
  std::string name_, path_;
  std::FILE* f_ = nullptr;
  size_t written_ = 0;
};

// A stdout line that is the result: a JSON object with a numeric "reward".
std::optional<json> result_line(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  if (i == line.size() || line[i] != '{') return std::nullopt;
  try {
    check_json_depth(line, "agent result", kMaxJsonDepth, "agent");
    json j = json::parse(line);
    const auto r = j.find("reward");
    if (!j.is_object() || r == j.end() || !r->is_number()) return std::nullopt;
    return j;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string join_argv(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

struct RunOutcome {
  std::vector<buffer::Experience> exps;
  std::string error;  // non-empty: the run failed
};

RunOutcome run_command(const CommandArgs& args, RunContext& ctx, int64_t run, uint64_t seed) {
  const buffer::Task& task = *ctx.task;
  std::unique_ptr<OpenAIEndpoint> ep = ctx.model->open_openai_endpoint();
  const std::string run_id = strcat(ctx.batch_id, "/", ctx.task_id, "/", run);
  std::string log_name = strcat(ctx.batch_id, "-", ctx.task_id, "-", run);
  for (auto& c : log_name)
    if (c == '/') c = '_';
  RunLog logf(ctx.log_dir, log_name);

  SubprocessOptions so;
  so.argv = args.argv;
  so.cwd = ctx.work_dir;
  so.env = {{"OPENAI_BASE_URL", ep->base_url},     {"OPENAI_API_BASE", ep->base_url}, {"OPENAI_API_KEY", ep->api_key},
            {"TRINITY_MODEL", ep->model},          {"TRINITY_TASK", task.raw},        {"TRINITY_RUN_ID", run_id},
            {"TRINITY_REPEAT_INDEX", strcat(run)}, {"TRINITY_SEED", strcat(seed)}};
  // Linux limits one environment string to 128 KiB: a larger row is only on stdin.
  if (task.raw.size() > kMaxEnvTask)
    so.env.erase(
        std::remove_if(so.env.begin(), so.env.end(), [](const auto& kv) { return kv.first == "TRINITY_TASK"; }),
        so.env.end());
  for (const auto& kv : args.env) so.env.push_back(kv);
  so.stdin_data = task.raw + "\n";
  so.timeout_s = args.timeout;
  ModelClient* model = ctx.model;
  so.cancelled = [model] { return model->cancelled(); };
  std::optional<json> result;
  std::deque<std::string> err_tail;
  so.on_stdout_line = [&](std::string_view line) {
    if (auto r = result_line(line)) {
      result = std::move(r);
      return;
    }
    logf.line("stdout", line);
  };
  so.on_stderr_line = [&](std::string_view line) {
    logf.line("stderr", line);
    err_tail.emplace_back(line.substr(0, 300));
    if (err_tail.size() > kStderrTail) err_tail.pop_front();
  };
  auto tail = [&] {
    std::string t;
    for (const auto& l : err_tail) t += (t.empty() ? "" : " | ") + l;
    std::string where = logf.path().empty() ? "" : strcat(" (log: ", logf.path(), ")");
    return (t.empty() ? "" : "; last stderr: " + t) + where;
  };
  const std::string cmd = args.argv.size() == 3 && args.argv[0] == "/bin/sh" ? args.argv[2] : join_argv(args.argv);
  RunOutcome out;
  SubprocessResult res;
  try {
    res = run_subprocess(so);
  } catch (const Error& e) {
    out.error = AgentError("start", strcat("cannot start '", cmd, "': ", e.what())).what();
    return out;
  }
  if (res.cancelled) throw CancelledError("the attempt was cancelled (timeout or shutdown); agent killed");
  if (res.timed_out) {
    out.error = AgentError("timeout", strcat("'", cmd, "' ran longer than workflow_args.timeout = ", args.timeout,
                                             " s; its process group was killed", tail()))
                    .what();
    return out;
  }
  if (res.signal != 0) {
    out.error = AgentError("signal", strcat("'", cmd, "' was ", res.describe(), tail())).what();
    return out;
  }
  if (res.exit_code != 0) {
    out.error = AgentError("exit", strcat("'", cmd, "' ", res.describe(), tail())).what();
    return out;
  }
  if (!result) {
    out.error = AgentError("no_reward", strcat("'", cmd, "' exited 0 without printing a result line {\"reward\": ...}",
                                               " on stdout", tail()))
                    .what();
    return out;
  }
  const double reward = (*result)["reward"].get<double>();
  if (!std::isfinite(reward)) {
    out.error = AgentError("no_reward", strcat("'", cmd, "' printed a non-finite reward")).what();
    return out;
  }
  HistoryExperiences h = experiences_from_history(ep->history->calls());
  if (h.experiences.empty()) {
    out.error = AgentError("no_calls", strcat("'", cmd, "' made no model call through OPENAI_BASE_URL with its ",
                                              "OPENAI_API_KEY, so there is nothing to train"))
                    .what();
    return out;
  }
  for (const auto& n : h.notes) log::debug("command_workflow: run ", run_id, ": ", n);
  std::map<std::string, double> metrics;
  if (const auto m = result->find("metrics"); m != result->end() && m->is_object())
    for (const auto& [k, v] : m->items())
      if (v.is_number()) metrics[k] = v.get<double>();
  metrics[kInconsistentHistoryMetric] = static_cast<double>(h.inconsistent);
  metrics["agent/calls"] = static_cast<double>(h.calls);
  json info_extra = json::object();
  if (const auto inf = result->find("info"); inf != result->end()) info_extra = *inf;
  for (auto& e : h.experiences) {
    e.reward = reward;
    e.metrics = metrics;
    e.eid.run = run;
    json info = json::parse(e.info.empty() ? "{}" : e.info);
    if (!info_extra.empty()) info["agent"] = info_extra;
    e.info = info.dump();
  }
  out.exps = std::move(h.experiences);
  return out;
}

class CommandWorkflow : public Workflow {
 public:
  explicit CommandWorkflow(const buffer::Task& task) : args_(parse_args(task)) {}
  bool can_repeat() const override { return true; }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    const int64_t n = std::max<int64_t>(1, ctx.repeat_times);
    std::vector<uint64_t> seeds;
    for (int64_t i = 0; i < n; ++i) seeds.push_back(ctx.rng ? ctx.rng->next_u64() >> 1 : static_cast<uint64_t>(i));
    std::vector<RunOutcome> outs(static_cast<size_t>(n));
    std::vector<std::string> cancelled(static_cast<size_t>(n));
    {
      std::vector<std::thread> threads;
      for (int64_t i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
          const size_t k = static_cast<size_t>(i);
          try {
            outs[k] = run_command(args_, ctx, ctx.run_id_base + i, seeds[k]);
          } catch (const CancelledError& e) {
            cancelled[k] = e.what();
          } catch (const std::exception& e) {
            outs[k].error = e.what();
          }
        });
      for (auto& t : threads) t.join();
    }
    for (const auto& c : cancelled)
      if (!c.empty()) throw CancelledError(c);
    for (size_t i = 0; i < outs.size(); ++i)
      if (!outs[i].error.empty())
        throw Error("workflow", strcat("run ", ctx.run_id_base + static_cast<int64_t>(i), ": ", outs[i].error));
    std::vector<buffer::Experience> exps;
    for (auto& o : outs)
      for (auto& e : o.exps) exps.push_back(std::move(e));
    return exps;
  }

 private:
  CommandArgs args_;
};

}  // namespace

void detail::register_command_workflow() {
  add_builtin("command_workflow", [](const buffer::Task& task) { return std::make_unique<CommandWorkflow>(task); });
}

}  // namespace trinity::workflow
