// Hostile inputs to the `trinity` binary: every one must end in one line
// "trinity: error: [component] ..." naming the input and exit code 1, never a signal, a hang
// (each subprocess runs under `timeout`) or "internal error".
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_util.h"

namespace fs = std::filesystem;

using namespace trinity::test;

namespace {

class CliInputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("trinity_cli_inputs_" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const Result r =
        run("init-model --arch qwen2 --hidden 32 --layers 1 --heads 2 --intermediate 64 "
            "--max-pos 64 --tokenizer bytes --seed 3 --out " +
            dir_ + "/model");
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // `trinity <args>` under a 60 s timeout (`env` prefix allowed); stdout and stderr captured.
  static Result run(const std::string& args, const std::string& env = "", int timeout_s = 60) {
    return run_trinity(dir_, args, timeout_s, env);
  }

  static std::string write(const std::string& name, const std::string& text) {
    const std::string p = dir_ + "/" + name;
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }

  // A GRPO config on the tiny model whose taskset is `taskset`; `extra` is appended.
  static std::string config(const std::string& name, const std::string& taskset, const std::string& extra = "") {
    return write(name + ".yaml",
                 "project: inputs\n"
                 "name: " +
                     name +
                     "\n"
                     "checkpoint_root_dir: " +
                     dir_ +
                     "/ck\n"
                     "model: {model_path: " +
                     dir_ +
                     "/model, max_prompt_tokens: 32, max_response_tokens: 8}\n"
                     "algorithm: {algorithm_type: grpo, repeat_times: 2, kl_loss_fn: none, optimizer: {lr: 1e-3}}\n"
                     "buffer:\n"
                     "  batch_size: 1\n"
                     "  total_steps: 1\n"
                     "  explorer_input:\n"
                     "    taskset:\n"
                     "      name: t\n"
                     "      path: " +
                     taskset +
                     "\n"
                     "      format: {prompt_key: prompt, response_key: answer}\n"
                     "    default_workflow_type: arithmetic_workflow\n"
                     "synchronizer: {sync_method: memory, sync_interval: 1}\n"
                     "monitor: {monitor_type: jsonl}\n" +
                     extra);
  }

  static std::string dir_;
};

std::string CliInputs::dir_;

std::string nested(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

void expect_one_error_line(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("trinity: error: [", 0), 0u) << r.err.substr(0, 2000);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err.substr(0, 2000);
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err.substr(0, 2000);
}

// For commands that log progress first (run): the last stderr line is the error.
void expect_error_last_line(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.code, 1) << r.err.substr(0, 2000);
  std::string last = r.err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  EXPECT_EQ(last.rfind("trinity: error: [", 0), 0u) << r.err.substr(0, 2000);
  EXPECT_NE(last.find(needle), std::string::npos) << "expected '" << needle << "' in: " << last;
}

}  // namespace

// --- JSON nested 100k deep: nlohmann's recursive code would overflow the stack (SIGSEGV) ---

TEST_F(CliInputs, DeeplyNestedTasksetRowIsAnError) {
  const std::string ts = write("deep/train.jsonl",
                               "{\"prompt\": \"1+1\", \"answer\": \"2\"}\n"
                               "{\"prompt\": \"1+2\", \"answer\": \"3\", \"x\": " +
                                   nested(100000) + "}\n");
  const std::string cfg = config("deep", ts);
  expect_one_error_line(run("debug workflow --config " + cfg + " --task 0"), "train.jsonl:2: JSON nested deeper");
  expect_error_last_line(run("run --config " + cfg), "train.jsonl:2: JSON nested deeper");
}

TEST_F(CliInputs, DeeplyNestedJsonInputsAreErrors) {
  const std::string tokens = write("deep_tokens.jsonl", "{\"tokens\": " + nested(100000) + "}\n");
  expect_one_error_line(run("debug logprobs --model " + dir_ + "/model --input " + tokens + " --output " + dir_ + "/o"),
                        "deep_tokens.jsonl:1");
  const std::string text = write("deep_text.jsonl", "{\"text\": \"hi\"}\n{\"messages\": " + nested(100000) + "}\n");
  expect_one_error_line(run("tokenize --tokenizer " + dir_ + "/model --input " + text + " --output " + dir_ + "/o"),
                        "deep_text.jsonl:2");
  fs::create_directories(dir_ + "/deep_tok");
  write("deep_tok/tokenizer.json", "{\"model\": " + nested(100000) + "}");
  expect_one_error_line(run("tokenize --tokenizer " + dir_ + "/deep_tok --input " + text + " --output " + dir_ + "/o"),
                        "tokenizer.json");
  const std::string exps = write("deep_buf/experiences.jsonl", "{\"tokens\": " + nested(100000) + "}\n");
  expect_one_error_line(run("buffer head --path " + exps), "nested deeper");
}

// --- sizes: a huge shape is one error before anything is allocated (was SIGABRT in an assertion) ---

TEST_F(CliInputs, HugeModelSizesAreErrors) {
  const std::string base = "init-model --arch qwen2 --hidden 32 --layers 1 --heads 2 --intermediate 64 --out " + dir_;
  expect_one_error_line(run(base + "/v1 --vocab 10000000000"), "vocab_size");
  // Each dimension within bounds, but the whole model cannot fit in memory.
  expect_one_error_line(run("init-model --arch qwen2 --hidden 16384 --layers 1000 --heads 128 --intermediate 65536 "
                            "--vocab 1000 --out " +
                            dir_ + "/v2"),
                        "allocating the model weights");
  std::string cfg = slurp(dir_ + "/model/config.json");
  const auto pos = cfg.find("\"intermediate_size\"");
  ASSERT_NE(pos, std::string::npos);
  fs::create_directories(dir_ + "/huge");
  fs::copy(dir_ + "/model", dir_ + "/huge", fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  write("huge/config.json", cfg.replace(pos, 19, "\"intermediate_size\": 10000000000, \"unused_key\""));
  expect_one_error_line(run("debug logprobs --model " + dir_ + "/huge --input " + dir_ + "/x --output " + dir_ + "/o"),
                        "intermediate_size");
}

// --- tokenizer.json ids: were narrowed to 32 bits unchecked (an out-of-bounds write) ---

TEST_F(CliInputs, OutOfRangeTokenizerIdsAreErrors) {
  const std::string tj = slurp(dir_ + "/model/tokenizer.json");
  const auto pos = tj.find("\"id\": 258");
  ASSERT_NE(pos, std::string::npos);
  const std::string text = write("tok_in.jsonl", "{\"text\": \"hello\"}\n");
  for (const std::string id : {"4294967295", "-5", "100000000"}) {
    std::string bad = tj;
    write("bad_tok/tokenizer.json", bad.replace(pos, 9, "\"id\": " + id));
    expect_one_error_line(run("tokenize --tokenizer " + dir_ + "/bad_tok --input " + text + " --output " + dir_ + "/o"),
                          id == "100000000" ? "largest token id 100000000" : "added_tokens[2]");
  }
}

// --- chat templates that would hang or exhaust memory: limits with a clear error ---

TEST_F(CliInputs, RunawayChatTemplatesAreErrors) {
  fs::create_directories(dir_ + "/tmpl");
  fs::copy_file(dir_ + "/model/tokenizer.json", dir_ + "/tmpl/tokenizer.json", fs::copy_options::overwrite_existing);
  const std::string msgs = write("msgs.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n");
  for (const auto& [tmpl, needle] : std::vector<std::pair<std::string, std::string>>{
           {"{% for i in range(1000000000) %}x{% endfor %}", "range()"},
           {"{{ 'x' * 1000000000 }}", "'*' would build"},
           {"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "loop iterations"},
           {"{% for i in range(1000000) %}{{ 'y' * 1000 }}{% endfor %}", "rendered output"}}) {
    write("tmpl/tokenizer_config.json", "{\"chat_template\": \"" + tmpl + "\"}");
    expect_one_error_line(run("tokenize --tokenizer " + dir_ + "/tmpl --input " + msgs + " --output " + dir_ + "/o"),
                          needle);
  }
}

// --- CLI: a stray positional argument (was silently dropped) ---

TEST_F(CliInputs, StrayPositionalArgumentIsAnError) {
  expect_one_error_line(run("config check --config " + dir_ + "/none.yaml --set a=1 b=2"), "unexpected argument 'b=2'");
}

TEST_F(CliInputs, HelpOnSubcommandsAndGroups) {
  Result r = run("run --help");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("usage: trinity run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--config"), std::string::npos) << r.out;
  r = run("buffer --help");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("buffer stats"), std::string::npos) << r.out;
  r = run("debug workflow -h");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("--no-color"), std::string::npos) << r.out;
}

// --- configs: expansion limits, duplicate keys, job names, lengths (a 2 KB document hung for 20 s, then
// "internal error: std::bad_alloc") ---

TEST_F(CliInputs, HostileConfigsFailFast) {
  const auto n = [](int i) { return std::to_string(i); };
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    laughs.append("a").append(n(i)).append(": &a").append(n(i)).append(" [");
    for (int k = 0; k < 10; ++k) laughs.append(k ? ", *a" : "*a").append(n(i - 1));
    laughs += "]\n";
  }
  ASSERT_LT(laughs.size(), 2048u);
  const auto t0 = std::chrono::steady_clock::now();
  expect_one_error_line(run("config check --config " + write("laughs.yaml", laughs), "", 20), "billion laughs");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 5.0) << "a 2 KB hostile config must fail within about a second";
  std::string interp = "x0: hahahahahahahahaha\n";
  for (int i = 1; i < 40; ++i)
    interp.append("x").append(n(i)).append(": \"${x").append(n(i - 1)).append("}${x").append(n(i - 1)).append("}\"\n");
  expect_one_error_line(run("config check --config " + write("interp.yaml", interp), "", 20), "MiB of text");
  const std::string ts = write("ok_tasks.jsonl", "{\"prompt\": \"1+1=\", \"answer\": \"2\"}\n");
  expect_one_error_line(run("config check --config " + config("dup", ts, "monitor: {monitor_type: none}\n")),
                        "duplicate key 'monitor' (first at line");
}

TEST_F(CliInputs, ConfigNamesAndLengthsAreChecked) {
  const std::string ts = write("ok_tasks.jsonl", "{\"prompt\": \"1+1=\", \"answer\": \"2\"}\n");
  const std::string cfg = config("names", ts);
  expect_one_error_line(run("config check --config " + cfg + " --set name=../../outside"),
                        "name: '../../outside' must be a directory name");
  // The tiny model has max_position_embeddings 64.
  expect_one_error_line(run("config check --config " + cfg + " --set model.max_model_len=128"),
                        "model.max_model_len: 128 exceeds the model's max_position_embeddings 64");
  expect_one_error_line(run("config check --config " + cfg + " --set algorithm.repeat_times=1000000000"),
                        "algorithm.repeat_times: 1000000000 is above trinity's limit");
  expect_one_error_line(
      run("config check --config " + cfg + " --set 'buffer.explorer_input.taskset.rollout_args={temperature: -1}'"),
      "rollout_args.temperature: must be >= 0");
}

// --- a run in which every task failed exits 1 with the failure counts (it exited 0) ---

TEST_F(CliInputs, RunWhereEveryTaskFailedIsAnError) {
  // arithmetic_workflow fails a task with no answer whose prompt is not "a+b=".
  const std::string bad = write("bad_tasks.jsonl", "{\"prompt\": \"hello\"}\n{\"prompt\": \"world\"}\n");
  const Result r = run("run --config " + config("allfail", bad) + " --set buffer.batch_size=2", "", 120);
  expect_error_last_line(r, "every task failed (2 tasks over 1 explore steps; error: 2)");
  // One task of two succeeds: the run ends normally (failures are warnings and metrics).
  const std::string mixed = write("mixed_tasks.jsonl", "{\"prompt\": \"1+1=\"}\n{\"prompt\": \"hello\"}\n");
  const Result ok = run("run --config " + config("somefail", mixed) + " --set buffer.batch_size=2", "", 120);
  EXPECT_EQ(ok.code, 0) << ok.err.substr(0, 3000);
  EXPECT_NE(ok.err.find("a task failed"), std::string::npos) << ok.err.substr(0, 3000);
}

// --- sizes: the KV cache budget and a config.json that does not match its tensors ---

TEST_F(CliInputs, KvCacheBeyondMemoryIsAnError) {
  const std::string ts = write("ok_tasks.jsonl", "{\"prompt\": \"1+1=\", \"answer\": \"2\"}\n");
  const Result r =
      run("run --config " + config("kv", ts) + " --set explorer.rollout_model.kv_cache_bytes=1000000000000000", "", 60);
  expect_error_last_line(r, "allocating the KV cache");
  EXPECT_NE(r.err.find("explorer.rollout_model.kv_cache_bytes"), std::string::npos) << r.err.substr(0, 3000);
  expect_error_last_line(run("serve --model " + dir_ + "/model --port 0 --kv-cache-mb 1000000000", "", 60),
                         "allocating the KV cache");
  expect_one_error_line(run("serve --model " + dir_ + "/model --kv-cache-mb 100000000000000000"),
                        "--kv-cache-mb must be in [1, 2^40]");
}

TEST_F(CliInputs, CheckpointNotMatchingConfigJsonFailsBeforeAllocating) {
  fs::create_directories(dir_ + "/mismatch");
  fs::copy(dir_ + "/model", dir_ + "/mismatch", fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::string cfg = slurp(dir_ + "/model/config.json");
  cfg = std::regex_replace(cfg, std::regex("\"num_hidden_layers\": *[0-9]+"), "\"num_hidden_layers\": 10000");
  cfg = std::regex_replace(cfg, std::regex("\"intermediate_size\": *[0-9]+"), "\"intermediate_size\": 4194304");
  ASSERT_NE(cfg.find("4194304"), std::string::npos) << cfg;
  write("mismatch/config.json", cfg);
  // 10000 layers x 3 x 32 x 4194304 floats were allocated (or refused) before the tensors were looked at.
  expect_one_error_line(
      run("debug logprobs --model " + dir_ + "/mismatch --input " + dir_ + "/x --output " + dir_ + "/o"),
      "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [64, 32], expected [4194304, 32]");
}

// --- a temperature below the engine's greedy threshold: the trainer divided the logits by 1e-9, so its
// logprobs disagreed with the (greedy, T = 1) rollout logprobs: actor/ppo_kl was -5.2 on step 1 ---

TEST_F(CliInputs, TinyTemperatureTrainsAsGreedy) {
  const std::string ts = write("temp_tasks.jsonl", "{\"prompt\": \"1+1=\"}\n{\"prompt\": \"2+3=\"}\n");
  const Result r = run("run --config " + config("tiny_temp", ts) +
                           " --set buffer.batch_size=2 --set 'buffer.explorer_input.taskset.rollout_args={temperature: "
                           "1.0e-9}'",
                       "", 120);
  ASSERT_EQ(r.code, 0) << r.err.substr(0, 3000);
  EXPECT_NE(r.err.find("rollout_args.temperature: 1e-09 is below 1e-05: sampling is greedy"), std::string::npos)
      << r.err.substr(0, 3000);
  const std::string metrics = slurp(dir_ + "/ck/inputs/tiny_temp/monitor/metrics.jsonl");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(metrics, m, std::regex("\"role\":\"trainer\",\"step\":1,[^\\n]*\"actor/ppo_kl\":([-0-9.e+]+)")))
      << metrics.substr(0, 2000);
  EXPECT_LT(std::abs(std::stod(m[1].str())), 1e-3) << "step 1 is on-policy: trainer and rollout logprobs agree";
}

// --- CLI: an unknown flag or command names the nearest valid one ---

TEST_F(CliInputs, UnknownFlagSuggestsTheNearestOne) {
  Result r = run("run --confg " + dir_ + "/x.yaml");
  expect_one_error_line(r, "unknown flag '--confg' (did you mean --config?); valid flags: --config, --set");
  r = run("debug workflow --no-colour");
  expect_one_error_line(r, "(did you mean --no-color?)");
  r = run("run --zzzzzzzz 1");  // nothing close: no suggestion, just the list
  expect_one_error_line(r, "unknown flag '--zzzzzzzz'; valid flags: --config, --set");
  r = run("rnu --config x.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("trinity: unknown command 'rnu' (did you mean 'run'?)"), std::string::npos) << r.err;
}

// --- CLI: trinity --version / trinity version ---

namespace {
std::string shell_out(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}
}  // namespace

TEST_F(CliInputs, VersionNamesReleaseCommitBuildAndBlas) {
  const Result r = run("--version", "TRINITY_THREADS=1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(run("version", "TRINITY_THREADS=1").out, r.out);
  // The CMake project version and the git commit the binary was built from.
  const std::string cmake = slurp(std::string(TRINITY_SOURCE_DIR) + "/CMakeLists.txt");
  const size_t v = cmake.find("VERSION ", cmake.find("project(trinity"));
  ASSERT_NE(v, std::string::npos);
  const std::string version = cmake.substr(v + 8, cmake.find_first_of(" )", v + 8) - v - 8);
  EXPECT_EQ(r.out.rfind("trinity " + version + " (commit ", 0), 0u) << r.out;
  const std::string head =
      shell_out(std::string("git -C ") + TRINITY_SOURCE_DIR + " rev-parse --short=12 HEAD 2>/dev/null");
  if (!head.empty()) {
    EXPECT_NE(r.out.find("(commit " + head), std::string::npos) << "binary older than HEAD? rebuild. " << r.out;
  }
  for (const char* needle : {"\nbuild:      ", ", GNU ", "\nflags:      ", "native=", "\nblas:       OpenBLAS ",
                             "\nblas core:  ", "\nthreads:    1 "})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << " in:\n" << r.out;
  const size_t core = r.out.find("blas core:  ") + 12;
  EXPECT_NE(r.out[core], '(') << "empty OpenBLAS core name: " << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  expect_one_error_line(run("version --verbose"), "unknown flag '--verbose'");
}

// Every binary starts with short OpenMP spins and malloc's huge-page advice (tensor/blas.cpp), and
// keeps what the user set instead.
TEST_F(CliInputs, VersionShowsTheStartupRuntimeDefaultsAndKeepsTheUsers) {
  const std::string clean = "env -u GLIBC_TUNABLES -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY TRINITY_THREADS=1";
  Result r = run("version", clean);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\nruntime:    GOMP_SPINCOUNT=3000, GLIBC_TUNABLES=glibc.malloc.hugetlb=1"), std::string::npos)
      << r.out;
  r = run("version", clean + " GLIBC_TUNABLES=glibc.malloc.check=0 GOMP_SPINCOUNT=7");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\nruntime:    GOMP_SPINCOUNT=7, GLIBC_TUNABLES=glibc.malloc.check=0"), std::string::npos)
      << r.out;
}
