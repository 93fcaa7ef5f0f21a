// to_yaml is complete: load(to_yaml(c)) == c field by field (Config::operator== is defaulted over every
// member, so a key to_yaml forgets, or writes in a form load reads differently, fails here). Covers
// every examples/*.yaml (and each of its stages) and a config with non-default values in every section.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "config/config.h"
#include "config_test_util.h"

namespace trinity::config {
namespace {

namespace fs = std::filesystem;

// What to_yaml describes: the settings, not where they were read from; the `stages:` list is a comment
// there (each stage's config round-trips on its own, below).
Config settings_only(Config c) {
  c.source.reset();
  c.stages.clear();
  c.config_path.clear();
  c.config_dir.clear();
  return c;
}

// to_yaml(c) loaded again from text equals c; on failure shows both YAML texts' first difference.
void expect_round_trip(const Config& c, const std::string& what) {
  const std::string y = to_yaml(c);
  Config back;
  try {
    back = load_config_text(y, what + " (to_yaml)", c.config_dir).config;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": to_yaml output does not load: " << e.what() << "\n" << y;
    return;
  }
  const Config a = settings_only(c), b = settings_only(back);
  if (a == b) return;
  std::string parts;
  auto part = [&](const char* name, bool same) {
    if (!same) parts += std::string(parts.empty() ? "" : ", ") + name;
  };
  part("algorithm", a.algorithm == b.algorithm);
  part("optimizer", a.optimizer == b.optimizer);
  part("model", a.model == b.model);
  part("buffer.explorer_input", a.buffer.explorer_input == b.buffer.explorer_input);
  part("buffer.trainer_input", a.buffer.trainer_input == b.buffer.trainer_input);
  part("buffer", a.buffer == b.buffer);
  part("explorer.rollout_model", a.explorer.rollout_model == b.explorer.rollout_model);
  part("explorer", a.explorer == b.explorer);
  part("synchronizer", a.synchronizer == b.synchronizer);
  part("trainer", a.trainer == b.trainer);
  part("monitor", a.monitor == b.monitor);
  part("log", a.log == b.log);
  part("data_processor", a.data_processor == b.data_processor);
  const std::string y2 = to_yaml(back);
  size_t i = 0;
  while (i < y.size() && i < y2.size() && y[i] == y2[i]) ++i;
  const size_t from = y.rfind('\n', i) == std::string::npos ? 0 : y.rfind('\n', i) + 1;
  ADD_FAILURE() << what << ": load(to_yaml(c)) != c in [" << parts << "]"
                << (y == y2 ? " (a field to_yaml does not write differs)"
                            : "; first differing line:\n  c:    " + y.substr(from, y.find('\n', i) - from) +
                                  "\n  back: " + y2.substr(from, y2.find('\n', i) - from));
}

TEST(ConfigRoundTrip, EveryExample) {
  setenv("TRINITY_QUICKSTART_DIR", "/tmp/trinity-roundtrip", 1);
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(TRINITY_SOURCE_DIR) / "examples")) {
    if (e.path().extension() != ".yaml") continue;
    const LoadResult r = load_config(e.path().string());
    expect_round_trip(r.config, e.path().filename().string());
    for (size_t s = 0; s < r.stages.size(); ++s)
      expect_round_trip(r.stages[s], e.path().filename().string() + " stage " + std::to_string(s));
    ++n;
  }
  EXPECT_GE(n, 5);
}

TEST(ConfigRoundTrip, NonDefaultValuesInEverySection) {
  const std::string extra =
      "mode: both\nproject: p\ngroup: g\nname: n\ncontinue_from_checkpoint: false\n"
      "synchronizer: {sync_method: checkpoint, sync_style: explorer_driven, sync_interval: 3, sync_offset: 1, "
      "sync_timeout: 77}\n"
      "trainer: {save_interval: 5, grad_clip: 0.5, save_hf_checkpoint: always, max_checkpoints_to_keep: 2, "
      "use_dynamic_bsz: false, micro_batch_size: 3, total_steps: 40, share_prompt_prefix: false}\n"
      "monitor: {monitor_type: jsonl, detailed_stats: true}\n"
      "explorer: {runner_per_model: 3, threads: 1, max_timeout: 60, max_retry_times: 1, eval_interval: 6, "
      "eval_on_startup: false, env_vars: {A: b}, dynamic_timeout: {enable: true, ratio: 2.5}}\n";
  const LoadResult r = testing::load(
      testing::base_yaml(extra), {"buffer.explorer_input.taskset.workflow_args={max_turns: 3, tag: 'x y', ids: [1, 2]}",
                                  "buffer.explorer_input.taskset.reward_fn_args={score: 0.5}",
                                  "buffer.explorer_input.taskset.rollout_args={temperature: 0.7, top_k: 20, n: 8}"});
  expect_round_trip(r.config, "non-default config");
  // And the values really are non-default (the test is not comparing two defaults).
  EXPECT_EQ(r.config.synchronizer.sync_interval, 3);
  EXPECT_EQ(r.config.trainer.micro_batch_size, 3);
  EXPECT_EQ(r.config.explorer.threads, 1);
  EXPECT_FALSE(r.config.trainer.share_prompt_prefix);
  EXPECT_EQ(r.config.explorer.env_vars.at("A"), "b");
  EXPECT_EQ(r.config.buffer.explorer_input.tasksets.at(0).rollout_args.n, 8);
  EXPECT_NE(r.config.buffer.explorer_input.tasksets.at(0).workflow_args.find("max_turns"), std::string::npos);
}

TEST(ConfigRoundTrip, BenchWithExternalModel) {
  const LoadResult r = testing::load(
      "mode: bench\ncheckpoint_root_dir: /tmp/ckpt\n"
      "model: {model_path: gpt-4o, max_model_len: 64, external_model: {enable: true, base_url_env: U, api_key_env: K, "
      "model_name: m}}\n"
      "buffer:\n  explorer_input:\n    eval_tasksets: [{name: e, path: /data/e}]\n"
      "    default_workflow_type: math_workflow\n");
  expect_round_trip(r.config, "bench with external_model");
  EXPECT_TRUE(r.config.model.external_model.enable);
}

// data_processor.experience_pipeline.operators and the task pipeline survive to_yaml; the task
// pipeline writes the first taskset by default; the experience pipeline's save keys are warned.
TEST(ConfigRoundTrip, ExperiencePipelineOperators) {
  const LoadResult r = testing::load(
      "checkpoint_root_dir: /tmp/ckpt\nmodel: {model_path: /m, max_model_len: 64}\n"
      "buffer:\n  explorer_input:\n    taskset: {path: /d.jsonl}\n    default_workflow_type: math_workflow\n"
      "data_processor:\n  task_pipeline: {operators: [{name: text_length_filter, args: {min_len: 3}}], "
      "inputs: [/raw.jsonl], target_fields: [q], priority_weights: {difficulty: -0.5, quality: 1}, top_k: 9}\n"
      "  experience_pipeline:\n    save_input: true\n    operators:\n      - name: reward_std_filter\n"
      "      - name: reward_shaping_mapper\n        args: {reward_shaping_configs: [{stats_key: q, op_type: MUL, "
      "weight: 0.5}]}\n");
  expect_round_trip(r.config, "experience pipeline");
  const auto& ops = r.config.data_processor.experience_operators;
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "reward_std_filter");
  EXPECT_EQ(ops[0].args, "{}");
  EXPECT_EQ(ops[1].name, "reward_shaping_mapper");
  EXPECT_NE(ops[1].args.find("\"op_type\":\"MUL\""), std::string::npos) << ops[1].args;
  std::string warnings;
  for (const auto& w : r.warnings) warnings += w + "\n";
  ASSERT_TRUE(r.config.data_processor.task_pipeline);
  const auto& tp = *r.config.data_processor.task_pipeline;
  EXPECT_EQ(tp.output, "/d.jsonl");  // the first taskset
  EXPECT_EQ(tp.inputs, std::vector<std::string>{"/raw.jsonl"});
  EXPECT_EQ(tp.top_k, 9);
  EXPECT_EQ(tp.target_fields, std::vector<std::string>{"q"});
  EXPECT_NE(tp.priority_weights.find("\"difficulty\":-0.5"), std::string::npos) << tp.priority_weights;
  EXPECT_EQ(tp.operators.at(0).name, "text_length_filter");
  EXPECT_NE(warnings.find("data_processor.experience_pipeline.save_input has no effect"), std::string::npos)
      << warnings;
}

}  // namespace
}  // namespace trinity::config
