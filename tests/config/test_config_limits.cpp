// Config inputs that used to hang, exhaust memory or load silently wrong: "billion laughs" documents
// (YAML aliases, ${...} chains), duplicate keys, job names escaping checkpoint_root_dir, lengths above
// the model's, and values that cannot train anything (negative temperature, 1e9 repeats, 1e12 tokens).
#include <chrono>
#include <cstdlib>

#include "config/tree.h"
#include "config_test_util.h"

using namespace trinity::config;
using namespace trinity::config::testing;
using trinity::strcat;

namespace {

// Loads `yaml`, expecting a ConfigError with every fragment, within `max_s` seconds.
void expect_fast_error(const std::string& yaml, const std::vector<std::string>& parts, double max_s = 2.0) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = load_error(yaml);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect_has(msg, parts);
  EXPECT_LT(s, max_s) << msg;
}

// A model directory holding only a config.json with `max_position_embeddings`.
std::string model_dir(int64_t max_positions) {
  const std::string d = temp_dir();
  write(d, "config.json",
        strcat("{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", \"max_position_embeddings\": ",
               max_positions, "}"));
  return d;
}

}  // namespace

// --- expansion limits ---

TEST(ConfigLimits, YamlBillionLaughsFailsFast) {
  // 10^9 leaves from 10 lines: yaml-cpp shares aliased nodes, copying them out is what blows up.
  std::string y = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    y += strcat("a", i, ": &a", i, " [");
    for (int k = 0; k < 10; ++k) y += strcat(k ? ", " : "", "*a", i - 1);
    y += "]\n";
  }
  EXPECT_LT(y.size(), 2048u);
  expect_fast_error(base_yaml() + y, {"cfg.yaml:", "more than 100000 values", "billion laughs"});
}

TEST(ConfigLimits, ExponentialInterpolationFailsFast) {
  std::string y = "x0: hahahahahahahahaha\n";
  for (int i = 1; i < 40; ++i) y += strcat("x", i, ": \"${x", i - 1, "}${x", i - 1, "}\"\n");
  expect_fast_error(base_yaml() + y, {"cfg.yaml:", "MiB of text"});
  // Mappings copied into mappings grow the same way.
  std::string m = "m0: {a: 1, b: 2}\n";
  for (int i = 1; i < 40; ++i) m += strcat("m", i, ": {a: \"${m", i - 1, "}\", b: \"${m", i - 1, "}\"}\n");
  expect_fast_error(base_yaml() + m, {"cfg.yaml:", "more than 100000 values"});
}

TEST(ConfigLimits, InterpolationDepthIsBounded) {
  // x0 -> x1 -> ... -> x199: each reference resolved inside the previous one.
  std::string y;
  for (int i = 0; i < 199; ++i) y += strcat("x", i, ": \"${x", i + 1, "}\"\n");
  y += "x199: end\n";
  const std::string msg = load_error(base_yaml() + y);
  expect_has(msg, {"cfg.yaml:", "interpolation nested more than 64 references deep (through x0)"});
  // 60 levels are fine (monitor_args takes any keys).
  std::string ok = "monitor:\n  monitor_args:\n";
  for (int i = 0; i < 60; ++i) ok += strcat("    y", i, ": \"${monitor.monitor_args.y", i + 1, "}\"\n");
  ok += "    y60: end\n";
  EXPECT_EQ(load(base_yaml() + ok + "name: ${monitor.monitor_args.y0}\n").config.name, "end");
}

TEST(ConfigLimits, SplicedValuesAreNotInterpolatedAgain) {
  // An environment value that names itself: spliced once, not expanded forever (was a stack overflow).
  ::setenv("TRINITY_TEST_SELF_REF", "a${oc.env:TRINITY_TEST_SELF_REF}", 1);
  const LoadResult r = load(base_yaml() + "project: \"p${oc.env:TRINITY_TEST_SELF_REF}\"\n");
  EXPECT_EQ(r.config.project, "pa${oc.env:TRINITY_TEST_SELF_REF}");
  ::unsetenv("TRINITY_TEST_SELF_REF");
}

TEST(ConfigLimits, ManyStagesOfALargeConfigAreBounded) {
  std::string big = "monitor: {monitor_args: {";
  for (int i = 0; i < 2000; ++i) big += strcat(i ? ", " : "", "k", i, ": ", i);
  big += "}}\nstages:\n";
  for (int i = 0; i < 100; ++i) big += strcat("  - {stage_name: s", i, "}\n");
  expect_fast_error(base_yaml() + big, {"stages: 100 stages of a config of", "more than 100000 values"});
}

// --- duplicate keys ---

TEST(ConfigLimits, DuplicateKeysAreErrorsNamingBothLines) {
  const std::string y =
      "checkpoint_root_dir: /tmp/ckpt\n"                 // 1
      "algorithm:\n"                                     // 2
      "  algorithm_type: grpo\n"                         // 3
      "  optimizer:\n"                                   // 4
      "    lr: 1.0e-5\n"                                 // 5
      "    lr: 1.0e-3\n"                                 // 6
      "model: {model_path: /m, max_model_len: 2048}\n";  // 7
  expect_has(load_error(y), {"cfg.yaml:6: duplicate key 'algorithm.optimizer.lr' (first at line 5)"});
  expect_has(load_error(base_yaml() + "model: {model_path: /other}\n"),
             {"cfg.yaml:16: duplicate key 'model' (first at line 7)"});
  expect_has(load_error(base_yaml() + "trainer: {save_interval: 1, save_interval: 2}\n"),
             {"duplicate key 'trainer.save_interval'"});
  // --set still replaces a key (an override, not a duplicate).
  EXPECT_EQ(load(base_yaml(), {"checkpoint_root_dir=/tmp/other"}).config.checkpoint_root_dir, "/tmp/other");
}

// --- job directory names ---

TEST(ConfigLimits, JobNamesMustStayInsideCheckpointRoot) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{{"name", "../../escape"},
                                                                                   {"name", "/etc"},
                                                                                   {"name", "a/../../b"},
                                                                                   {"name", "a//b"},
                                                                                   {"name", "\"\""},
                                                                                   {"project", ".."},
                                                                                   {"project", "."},
                                                                                   {"group", "../x"}}) {
    const std::string msg = load_error(base_yaml() + key + ": " + value + "\n");
    expect_has(msg, {"cfg.yaml:", key + ": ", "checkpoint_root_dir/project/group/name"});
  }
  const std::string msg = load_error(base_yaml() + "stages:\n  - {stage_name: ..}\n");
  expect_has(msg, {"stages[0].stage_name: '..'", "<job dir>/<stage_name>"});
  // Subdirectories are fine; the job dir stays under the root.
  const LoadResult r = load(base_yaml() + "project: p\ngroup: g\nname: exp/run1\n");
  EXPECT_EQ(r.config.job_dir(), "/tmp/ckpt/p/g/exp/run1");
}

// --- lengths ---

TEST(ConfigLimits, MaxModelLenAboveTheModelsIsAnError) {
  const std::string dir = model_dir(64);
  const std::string y =
      "checkpoint_root_dir: /tmp/ckpt\nalgorithm: {algorithm_type: grpo}\n"
      "buffer:\n  explorer_input:\n    taskset: {path: /d.jsonl}\n"
      "    default_workflow_type: math_workflow\n";
  expect_has(load_error(y + "model: {model_path: " + dir + ", max_model_len: 128}\n"),
             {"model.max_model_len: 128 exceeds the model's max_position_embeddings 64", "config.json"});
  expect_has(load_error(y + "model: {model_path: " + dir + ", max_prompt_tokens: 60, max_response_tokens: 8}\n"),
             {"max_prompt_tokens + max_response_tokens) 68 exceeds the model's max_position_embeddings 64"});
  expect_has(load_error(y + "model: {model_path: " + dir +
                        ", max_model_len: 64}\n"
                        "explorer: {rollout_model: {max_model_len: 100}}\n"),
             {"explorer.rollout_model.max_model_len: 100 exceeds the model's max_position_embeddings 64"});
  EXPECT_NO_THROW(load(y + "model: {model_path: " + dir + ", max_model_len: 64}\n"));
}

TEST(ConfigLimits, AbsurdTokenCountsAreErrors) {
  expect_has(load_error("checkpoint_root_dir: /tmp/ckpt\nalgorithm: {algorithm_type: grpo}\n"
                        "model: {model_path: /m, max_prompt_tokens: 32, max_response_tokens: 1000000000000}\n"),
             {"model.max_response_tokens: 1000000000000 is above trinity's limit of 16777216 tokens"});
  expect_has(load_error(base_yaml(), {"model.max_model_len=100000000"}),
             {"model.max_model_len: 100000000 is above trinity's limit of 16777216 tokens"});
  expect_has(load_error(base_yaml(), {"buffer.explorer_input.taskset.rollout_args={max_tokens: 1000000000000}"}),
             {"buffer.explorer_input.taskset.rollout_args.max_tokens: must be in [1, model.max_model_len = 2048], got "
              "1000000000000"});
  expect_has(load_error(base_yaml(), {"explorer.rollout_model.max_response_tokens=5000"}),
             {"explorer.rollout_model.max_response_tokens: must be in [1, max_model_len = 2048], got 5000"});
}

// --- counts and temperatures ---

TEST(ConfigLimits, RepeatAndRunnerCountsAreBounded) {
  expect_has(load_error(base_yaml(), {"algorithm.repeat_times=1000000000"}),
             {"algorithm.repeat_times: 1000000000 is above trinity's limit of 65536"});
  expect_has(load_error(base_yaml("    eval_tasksets: [{name: e, path: /e, repeat_times: 1000000000}]\n")),
             {"buffer.explorer_input.eval_tasksets[0].repeat_times: must be in [1, 65536], got 1000000000"});
  expect_has(load_error(base_yaml(), {"explorer.runner_per_model=1000000"}),
             {"explorer.runner_per_model: 1000000 is above trinity's limit of 1024"});
  expect_has(load_error(base_yaml(), {"explorer.threads=-2"}),
             {"explorer.threads: -2: expected -1 (no budget), 0 (half the cores) or a thread count"});
  EXPECT_EQ(load(base_yaml(), {"explorer.threads=-1"}).config.explorer.threads, -1);
}

TEST(ConfigLimits, NegativeTemperaturesAreErrorsTinyOnesAreGreedy) {
  expect_has(load_error(base_yaml(), {"buffer.explorer_input.taskset.rollout_args={temperature: -0.5}"}),
             {"buffer.explorer_input.taskset.rollout_args.temperature: must be >= 0 (0 = greedy), got -0.5"});
  expect_has(load_error(base_yaml(), {"explorer.rollout_model.temperature=-1"}),
             {"explorer.rollout_model.temperature: must be >= 0"});
  expect_has(load_error(base_yaml(), {"model.temperature=-1"}), {"model.temperature: must be >= 0"});
  const LoadResult r = load(base_yaml(), {"buffer.explorer_input.taskset.rollout_args={temperature: 1.0e-9}"});
  EXPECT_TRUE(has_warning(r, "rollout_args.temperature: 1e-09 is below 1e-05: sampling is greedy"));
  EXPECT_DOUBLE_EQ(*r.config.buffer.explorer_input.tasksets[0].rollout_args.temperature, 1e-9);
  EXPECT_FALSE(has_warning(load(base_yaml(), {"model.temperature=0"}), "greedy"));  // 0 is plainly greedy
}
