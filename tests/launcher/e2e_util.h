// Helpers for the launcher e2e tests: a scratch directory with a tiny model (bytes tokenizer) and
// arithmetic data made by the `trinity` binary, child processes with a hard deadline (a hung run is
// SIGKILLed and fails the test instead of blocking CI; children also die with the test process),
// metrics.jsonl reading, and a base GRPO config every test varies with --set overrides.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace trinity::test {

namespace fs = std::filesystem;
using nlohmann::json;

inline std::string trinity_bin() { return std::string(TRINITY_BINARY_DIR) + "/trinity"; }

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

struct Proc {
  pid_t pid = -1;
  std::string log;
};

// Starts `args` (args[0] = executable) with stdout + stderr to `log`.
inline Proc spawn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return {pid, log};
}

// Exit code, 128 + signal if killed by one, or -1 if the deadline passed (the child is SIGKILLed).
inline int wait_exit(const Proc& p, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int st = 0;
    const pid_t r = waitpid(p.pid, &st, WNOHANG);
    if (r == p.pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (std::chrono::steady_clock::now() > end) {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Polls `cond` every 20 ms until it holds (true) or `seconds` pass (its last value).
inline bool wait_for(const std::function<bool()>& cond, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

struct RunOut {
  int rc = 0;
  std::string out;
  double seconds = 0;
};

// Runs `trinity <args...>` under a deadline; rc -1 = timed out (killed).
inline RunOut trinity(const std::vector<std::string>& args, const std::string& log, double timeout_s = 60) {
  std::vector<std::string> a = {trinity_bin()};
  a.insert(a.end(), args.begin(), args.end());
  const auto t0 = std::chrono::steady_clock::now();
  Proc p = spawn(a, log);
  RunOut r;
  r.rc = wait_exit(p, timeout_s);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.out = slurp(log);
  return r;
}

inline std::vector<json> read_metrics(const std::string& job_dir) {
  std::vector<json> out;
  std::ifstream in(job_dir + "/monitor/metrics.jsonl");
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

// Sum / presence / max step of a metric key over the lines of one role.
inline double metric_sum(const std::vector<json>& m, const std::string& role, const std::string& key) {
  double s = 0;
  for (const auto& j : m)
    if (j.value("role", "") == role && j.contains(key)) s += j[key].get<double>();
  return s;
}
inline bool has_metric(const std::vector<json>& m, const std::string& role, const std::string& key) {
  for (const auto& j : m)
    if (j.value("role", "") == role && j.contains(key)) return true;
  return false;
}
inline std::vector<double> metric_values(const std::vector<json>& m, const std::string& role, const std::string& key) {
  std::vector<double> v;
  for (const auto& j : m)
    if (j.value("role", "") == role && j.contains(key)) v.push_back(j[key].get<double>());
  return v;
}
// Steps of the lines of `role` that carry `key`.
inline std::vector<int64_t> metric_steps(const std::vector<json>& m, const std::string& role, const std::string& key) {
  std::vector<int64_t> v;
  for (const auto& j : m)
    if (j.value("role", "") == role && j.contains(key)) v.push_back(j["step"].get<int64_t>());
  return v;
}

// Removes the scratch root when the test binary exits with every test passed; a failed run keeps it
// for inspection (each binary's root is ~70 MB: hundreds of kept ones filled developers' /tmp).
struct ScratchRootCleanup {
  std::string path;
  ~ScratchRootCleanup() {
    if (!path.empty() && !::testing::UnitTest::GetInstance()->Failed()) {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  }
};

// A scratch root with model/ (qwen2, 1 layer, bytes tokenizer) and data/{train,eval,sft}.jsonl.
// Made once per test binary; each test makes its own job under <root>/ckpt.
inline const std::string& shared_root() {
  static ScratchRootCleanup cleanup;
  static const std::string root = [] {
    const std::string r = (fs::temp_directory_path() / ("trinity-launcher-test-" + std::to_string(getpid()))).string();
    fs::remove_all(r);
    fs::create_directories(r);
    cleanup.path = r;
    const RunOut m = trinity({"init-model", "--arch", "qwen2", "--hidden", "32", "--layers", "1", "--heads", "2",
                              "--intermediate", "64", "--max-pos", "64", "--tokenizer", "bytes", "--seed", "1", "--out",
                              r + "/model"},
                             r + "/init.log");
    EXPECT_EQ(m.rc, 0) << m.out;
    const RunOut d = trinity({"make-data", "arithmetic", "--out", r + "/data", "--train", "64", "--eval", "4", "--sft",
                              "32", "--seed", "3"},
                             r + "/data.log");
    EXPECT_EQ(d.rc, 0) << d.out;
    return r;
  }();
  return root;
}

// Base GRPO config (mode both, memory sync): batch 2 tasks x 2 repeats, 4 explore steps, 6-token
// responses, 4 runners, eval every 2 steps on 4 eval tasks, save every 2 steps. `name` is the job.
inline std::string base_yaml(const std::string& root, const std::string& name) {
  std::string y = R"(project: t
name: NAME
checkpoint_root_dir: ROOT/ckpt
continue_from_checkpoint: true
model:
  model_path: ROOT/model
  max_prompt_tokens: 24
  max_response_tokens: 6
algorithm:
  algorithm_type: grpo
  repeat_times: 2
  optimizer: {lr: 1e-3}
buffer:
  batch_size: 2
  total_steps: 4
  explorer_input:
    taskset:
      name: arith
      path: ROOT/data/train.jsonl
      format: {prompt_key: prompt, response_key: answer}
    eval_tasksets:
      - name: arith_eval
        path: ROOT/data/eval.jsonl
        format: {prompt_key: prompt, response_key: answer}
        rollout_args: {temperature: 0.0}
    default_workflow_type: arithmetic_workflow
explorer:
  runner_per_model: 4
  eval_interval: 2
trainer:
  save_interval: 2
)";
  auto rep = [&](const std::string& from, const std::string& to) {
    for (size_t p = y.find(from); p != std::string::npos; p = y.find(from, p + to.size())) y.replace(p, from.size(), to);
  };
  rep("ROOT", root);
  rep("NAME", name);
  return y;
}

inline std::string job_dir(const std::string& root, const std::string& name) { return root + "/ckpt/t/" + name; }

// Writes <root>/<name>.yaml and returns its path.
inline std::string write_config(const std::string& root, const std::string& name, const std::string& yaml) {
  const std::string p = root + "/" + name + ".yaml";
  write_text(p, yaml);
  return p;
}

}  // namespace trinity::test
