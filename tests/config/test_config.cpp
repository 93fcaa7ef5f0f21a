// Config layer: Trinity-RFT defaults and derived values, error messages (file:line, did-you-mean,
// types, ranges), interpolation, --set overrides, relative paths, warnings.
#include <cstdlib>

#include "config_test_util.h"

using namespace trinity::config;
using namespace trinity::config::testing;

TEST(ConfigLoad, GrpoDefaultsAndDerivedValues) {
  const LoadResult r = load(base_yaml());
  const Config& c = r.config;
  EXPECT_EQ(c.mode, "both");
  EXPECT_EQ(c.project, "Trinity-RFT");
  EXPECT_EQ(c.job_dir(), "/tmp/ckpt/Trinity-RFT/rft");  // empty group skipped
  EXPECT_EQ(c.algorithm.algorithm_type, "grpo");
  EXPECT_EQ(c.repeat_times, 8);
  EXPECT_EQ(c.schema_type, "experience");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 1e-5);
  EXPECT_DOUBLE_EQ(c.optimizer.min_lr_ratio, 0.01);
  EXPECT_EQ(c.optimizer.lr_scheduler_type, "constant");
  EXPECT_EQ(c.model.max_prompt_tokens, 1024);  // 2048 - 1024
  EXPECT_EQ(c.model.critic_model_path, "/models/qwen");
  EXPECT_EQ(c.buffer.train_batch_size, 96 * 8);
  ASSERT_EQ(c.buffer.explorer_input.tasksets.size(), 1u);
  const auto& t = c.buffer.explorer_input.tasksets[0];
  EXPECT_EQ(t.name, "gsm8k");
  EXPECT_EQ(t.repeat_times, 8);
  EXPECT_EQ(t.batch_size, 96);
  EXPECT_EQ(t.default_workflow_type, "math_workflow");
  EXPECT_EQ(t.format.prompt_key, "question");
  EXPECT_EQ(t.rollout_args.max_tokens, 1024);
  EXPECT_DOUBLE_EQ(*t.rollout_args.temperature, 1.0);
  EXPECT_EQ(*t.rollout_args.top_k, -1);
  const auto& eb = c.buffer.trainer_input.experience_buffer;
  EXPECT_EQ(eb.name, "experience_buffer");
  EXPECT_EQ(eb.storage_type, "sql");  // trinity's durable default (Trinity-RFT: queue)
  EXPECT_EQ(eb.path, c.job_dir() + "/buffer/experience_buffer.db");
  EXPECT_EQ(eb.batch_size, 768);
  EXPECT_EQ(c.synchronizer.sync_method, "memory");
  EXPECT_EQ(c.trainer.max_token_len_per_gpu, 4096);
  EXPECT_EQ(c.explorer.rollout_model.max_response_tokens, 1024);
  EXPECT_EQ(c.explorer.rollout_model.kv_cache_bytes, int64_t{1} << 30);
  EXPECT_EQ(c.monitor.monitor_type, "tensorboard");
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_TRUE(r.stages.empty());
}

TEST(ConfigLoad, LengthSplitRules) {
  auto lens = [](const std::string& model) {
    const std::string y = "model:\n  model_path: m\n" + model + "mode: train\n" +
                          "buffer:\n  train_batch_size: 4\n";
    return load(y).config.model;
  };
  auto m = lens("  max_model_len: 101\n");
  EXPECT_EQ(m.max_prompt_tokens, 50);
  EXPECT_EQ(m.max_response_tokens, 51);
  m = lens("  max_prompt_tokens: 30\n  max_response_tokens: 20\n");
  EXPECT_EQ(m.max_model_len, 50);
  m = lens("  max_model_len: 100\n  max_prompt_tokens: 30\n");
  EXPECT_EQ(m.max_response_tokens, 70);
  m = lens("  max_model_len: 100\n  max_response_tokens: 10\n  min_response_tokens: 10\n");
  EXPECT_EQ(m.min_response_tokens, 9);
  expect_has(load_error("model:\n  model_path: m\n  max_response_tokens: 10\n"),
             {"max_model_len is required", "cfg.yaml:2"});
}

TEST(ConfigErrors, PromptPlusResponseExceedsModelLen) {
  const std::string y = "mode: train\nbuffer: {train_batch_size: 4}\nmodel:\n  model_path: m\n  max_model_len: 100\n"
                        "  max_prompt_tokens: 60\n  max_response_tokens: 50\n";
  expect_has(load_error(y), {"cfg.yaml:4", "max_prompt_tokens (60) + max_response_tokens (50) = 110",
                             "exceeds max_model_len (100)"});
}

TEST(ConfigErrors, UnknownKeyDidYouMeanWithLine) {
  expect_has(load_error(base_yaml("trainer:\n  save_intervall: 10\n")),
             {"cfg.yaml:17", "unknown key 'trainer.save_intervall'", "did you mean 'save_interval'"});
  expect_has(load_error(base_yaml("synchroniser:\n  sync_interval: 2\n")),
             {"cfg.yaml:17", "unknown key 'synchroniser'", "did you mean 'synchronizer'"});
  // Inside a taskset (parsed by the buffer layer): line of the offending key.
  const std::string y = "model: {model_path: m, max_model_len: 64}\nbuffer:\n  explorer_input:\n    taskset:\n"
                        "      path: /d\n      format:\n        promt_key: q\n    default_workflow_type: w\n";
  expect_has(load_error(y), {"cfg.yaml:7", "buffer.explorer_input.taskset.format.promt_key", "did you mean 'prompt_key'"});
  // Algorithm keys go through AlgorithmSpec.
  expect_has(load_error(base_yaml("explorer:\n  eval_interval: 10\n"), {"algorithm.repeat_time=4"}),
             {"--set algorithm.repeat_time=4", "repeat_time"});
}

TEST(ConfigErrors, WrongTypeNamesKeyValueAndLine) {
  const std::string y = "model: {model_path: m, max_model_len: 64}\nmode: train\nbuffer:\n  batch_size: abc\n";
  expect_has(load_error(y), {"cfg.yaml:4", "buffer.batch_size: expected an integer, got 'abc'"});
  expect_has(load_error(base_yaml("trainer:\n  enable_preview: maybe\n")),
             {"cfg.yaml:17", "trainer.enable_preview: expected true or false, got 'maybe'"});
  expect_has(load_error(base_yaml("explorer:\n  rollout_model: 3\n")), {"explorer.rollout_model: expected a mapping"});
}

TEST(ConfigErrors, RangeChecks) {
  expect_has(load_error(base_yaml(), {"buffer.batch_size=0"}), {"buffer.batch_size: must be > 0, got 0"});
  expect_has(load_error(base_yaml("synchronizer: {sync_interval: 0}\n")), {"cfg.yaml:16", "sync_interval: must be > 0"});
  expect_has(load_error(base_yaml(), {"algorithm.optimizer.lr=-1"}), {"algorithm.optimizer.lr: must be >= 0"});
  expect_has(load_error(base_yaml("trainer: {save_hf_checkpoint: sometimes}\n")), {"'sometimes' is not one of always"});
}

TEST(ConfigErrors, MissingModelPath) {
  expect_has(load_error("mode: train\nbuffer: {train_batch_size: 2}\nmodel: {max_model_len: 64}\n"),
             {"model.model_path: is required"});
}

TEST(ConfigErrors, TasksetAndTasksets) {
  const std::string y = "model: {model_path: m, max_model_len: 64}\nbuffer:\n  explorer_input:\n"
                        "    taskset: {path: /a}\n    tasksets: [{path: /b}]\n    default_workflow_type: w\n";
  expect_has(load_error(y), {"cfg.yaml:5", "exactly one of 'taskset' and 'tasksets'"});
  expect_has(load_error("model: {model_path: m, max_model_len: 64}\n"), {"a taskset is required in mode both"});
}

TEST(ConfigErrors, UnsupportedModesAndOptimizers) {
  expect_has(load_error<trinity::UnsupportedError>(base_yaml("mode: colocate\n")), {"colocate", "mode: both"});
  expect_has(load_error<trinity::UnsupportedError>(base_yaml(), {"algorithm.optimizer.optimizer_type=sgd"}), {"sgd"});
  EXPECT_EQ(load(base_yaml("mode: serve\n")).config.mode, "serve");
  expect_has(load_error(base_yaml("mode: fly\n")), {"cfg.yaml:16", "mode: 'fly' is not one of"});
  expect_has(load_error(base_yaml(), {"algorithm.algorithm_type=nope"}), {"nope"});
}

TEST(ConfigInterpolation, EnvWithAndWithoutDefault) {
  ::unsetenv("TRINITY_CFG_TEST_ROOT");
  auto y = [](const std::string& root) { return base_yaml("project: p\nname: ${project}-run\n") + "group: " + root + "\n"; };
  LoadResult r = load(y("${oc.env:TRINITY_CFG_TEST_ROOT,grp}"));
  EXPECT_EQ(r.config.group, "grp");
  EXPECT_EQ(r.config.name, "p-run");
  ::setenv("TRINITY_CFG_TEST_ROOT", "from_env", 1);
  r = load(y("${oc.env:TRINITY_CFG_TEST_ROOT,grp}"));
  EXPECT_EQ(r.config.group, "from_env");
  ::unsetenv("TRINITY_CFG_TEST_ROOT");
  expect_has(load_error(y("${oc.env:TRINITY_CFG_TEST_ROOT}")),
             {"cfg.yaml:18", "group", "environment variable 'TRINITY_CFG_TEST_ROOT' is not set"});
  // A whole-value reference keeps the referenced value's type.
  r = load(base_yaml("trainer: {max_token_len_per_gpu: '${model.max_model_len}'}\n"));
  EXPECT_EQ(r.config.trainer.max_token_len_per_gpu, 2048);
  expect_has(load_error(base_yaml("name: ${nothing.here}\n")), {"cfg.yaml:16", "'${nothing.here}' refers to a key"});
  expect_has(load_error(base_yaml("project: ${name}\nname: ${project}\n")), {"interpolation cycle"});
}

TEST(ConfigOverrides, SetValuesAndUnknownPaths) {
  LoadResult r = load(base_yaml(), {"buffer.batch_size=4", "synchronizer.sync_interval=2",
                                    "buffer.explorer_input.taskset.rollout_args={temperature: 0.5}"});
  EXPECT_EQ(r.config.buffer.batch_size, 4);
  EXPECT_EQ(r.config.buffer.train_batch_size, 32);
  EXPECT_EQ(r.config.synchronizer.sync_interval, 2);
  EXPECT_EQ(r.config.explorer.eval_interval, 100);
  EXPECT_DOUBLE_EQ(*r.config.buffer.explorer_input.tasksets[0].rollout_args.temperature, 0.5);
  expect_has(load_error(base_yaml(), {"trainer.save_intervl=3"}),
             {"--set trainer.save_intervl=3", "did you mean 'save_interval'"});
  expect_has(load_error(base_yaml(), {"noequals"}), {"expected key.path=value"});
  // eval_interval is rounded to a multiple of sync_interval, with a warning.
  r = load(base_yaml(), {"synchronizer.sync_interval=3", "explorer.eval_interval=10"});
  EXPECT_EQ(r.config.explorer.eval_interval, 9);
  EXPECT_TRUE(has_warning(r, "eval_interval 10 is not a multiple"));
}

TEST(ConfigPaths, RelativePathsResolveAgainstConfigDir) {
  const std::string dir = temp_dir();
  write(dir, "data/train.jsonl", "{}\n");
  write(dir, "tpl.jinja", "{{ messages }}");
  std::filesystem::create_directories(dir + "/model");
  const std::string y = "model:\n  model_path: model\n  max_model_len: 64\n  chat_template_path: tpl.jinja\n"
                        "buffer:\n  explorer_input:\n    taskset: {path: data/train.jsonl}\n"
                        "    default_workflow_type: w\n  trainer_input:\n"
                        "    experience_buffer: {name: buf, storage_type: sql}\n";
  const Config c = load_config(write(dir, "cfg.yaml", y)).config;
  EXPECT_EQ(c.model.model_path, dir + "/model");
  EXPECT_EQ(c.model.custom_chat_template, "{{ messages }}");
  EXPECT_EQ(c.explorer.rollout_model.chat_template, "{{ messages }}");
  EXPECT_EQ(c.buffer.explorer_input.tasksets[0].path, dir + "/data/train.jsonl");
  EXPECT_EQ(c.buffer.explorer_input.tasksets[0].name, "taskset_0");
  EXPECT_EQ(c.buffer.trainer_input.experience_buffer.path, c.job_dir() + "/buffer/buf.db");
  // A hub id that does not exist locally stays as written.
  const Config h = load(base_yaml(), {"model.model_path=Qwen/Qwen2.5-1.5B"}).config;
  EXPECT_EQ(h.model.model_path, "Qwen/Qwen2.5-1.5B");
  EXPECT_EQ(h.buffer.explorer_input.tasksets[0].path, "/data/gsm8k");
  // sqlite:///relative is anchored at the config dir.
  const Config s = load_config(write(dir, "cfg2.yaml", y), {"buffer.trainer_input.experience_buffer.path=sqlite:///x.db"}).config;
  EXPECT_EQ(s.buffer.trainer_input.experience_buffer.path, "sqlite:///" + dir + "/x.db");
}

TEST(ConfigWarnings, IgnoredTrinityKeysWarnOnce) {
  const std::string extra =
      "cluster: {node_num: 1, gpu_per_node: 2}\n"
      "explorer:\n  rollout_model: {engine_num: 2, tensor_parallel_size: 1, gpu_memory_utilization: 0.9, "
      "temperature: 0.7}\n"
      "synchronizer: {sync_method: nccl}\nmonitor: {monitor_type: wandb}\n"
      "trainer: {trainer_type: verl, ulysses_sequence_parallel_size: 1}\n";
  const LoadResult r = load(base_yaml(extra));
  EXPECT_TRUE(has_warning(r, "cluster.node_num has no effect"));
  EXPECT_TRUE(has_warning(r, "explorer.rollout_model.gpu_memory_utilization has no effect"));
  EXPECT_TRUE(has_warning(r, "engine_num"));
  EXPECT_TRUE(has_warning(r, "nccl"));
  EXPECT_TRUE(has_warning(r, "wandb"));
  EXPECT_TRUE(has_warning(r, "trainer.trainer_type has no effect"));
  EXPECT_EQ(r.config.synchronizer.sync_method, "memory");
  EXPECT_EQ(r.config.monitor.monitor_type, "jsonl");
  EXPECT_EQ(r.config.explorer.rollout_model.engine_num, 1);
  EXPECT_DOUBLE_EQ(r.config.explorer.rollout_model.temperature, 0.7);
  EXPECT_DOUBLE_EQ(r.config.explorer.rollout_model.top_p, 1.0);
  for (size_t i = 0; i < r.warnings.size(); ++i)
    for (size_t j = i + 1; j < r.warnings.size(); ++j) EXPECT_NE(r.warnings[i], r.warnings[j]);
}

TEST(ConfigLoad, EnablePrefixCachingIsRead) {
  EXPECT_TRUE(load(base_yaml()).config.explorer.rollout_model.enable_prefix_caching);
  const LoadResult r = load(base_yaml("explorer:\n  rollout_model: {enable_prefix_caching: false}\n"));
  EXPECT_FALSE(r.config.explorer.rollout_model.enable_prefix_caching);
  EXPECT_FALSE(has_warning(r, "enable_prefix_caching"));
}

TEST(ConfigModes, SyncMethodPerModeAndOfflineAlgorithms) {
  Config c = load(base_yaml("mode: explore\n")).config;
  EXPECT_EQ(c.synchronizer.sync_method, "checkpoint");
  const std::string sft = "mode: train\nalgorithm: {algorithm_type: sft}\nmodel: {model_path: m, max_model_len: 64}\n"
                          "buffer:\n  trainer_input:\n    experience_buffer: {storage_type: file, path: /d/sft.jsonl}\n";
  expect_has(load_error(sft), {"train_batch_size is required for algorithm_type sft"});
  c = load(sft, {"buffer.train_batch_size=8"}).config;
  EXPECT_EQ(c.schema_type, "sft");
  EXPECT_EQ(c.buffer.trainer_input.experience_buffer.schema_type, "sft");
  EXPECT_EQ(c.buffer.trainer_input.experience_buffer.batch_size, 8);
  const std::string dpo = "mode: train\nalgorithm: {algorithm_type: dpo}\nmodel: {model_path: m, max_model_len: 64}\n"
                          "buffer: {train_batch_size: 4}\n";
  expect_has(load_error(dpo), {"reads its data from a file or sql experience_buffer"});
}

TEST(ConfigYaml, ToYamlPrintsResolvedValues) {
  const LoadResult r = load(base_yaml());
  const std::string y = to_yaml(r.config);
  expect_has(y,
             {"train_batch_size: 768", "max_prompt_tokens: 1024", "sync_method: \"memory\"",
              "checkpoint_job_dir: \"/tmp/ckpt/Trinity-RFT/rft\"", "name: \"gsm8k\"", "max_tokens: 1024", "lr: 1e-05"});
  expect_has(load_error("{}"), {"cfg.yaml", "model.model_path: is required"});
}

// model.external_model (bench mode only): defaults, values, unknown keys, the mode check, model_name
// standing in for an empty model_path.
TEST(ConfigModel, ExternalModel) {
  const std::string bench =
      "mode: bench\nmodel:\n  model_path: MODEL\n  max_model_len: 64\n  EXT\n"
      "buffer:\n  explorer_input:\n    eval_tasksets: [{name: e, path: /data/e}]\n"
      "    default_workflow_type: math_workflow\n";
  auto yaml = [&](const std::string& model_path, const std::string& ext) {
    std::string y = bench;
    y.replace(y.find("MODEL"), 5, model_path);
    y.replace(y.find("EXT"), 3, ext);
    return y;
  };
  const LoadResult d = load(base_yaml());
  EXPECT_FALSE(d.config.model.external_model.enable);
  EXPECT_EQ(d.config.model.external_model.base_url_env, "OPENAI_BASE_URL");
  EXPECT_EQ(d.config.model.external_model.api_key_env, "OPENAI_API_KEY");
  EXPECT_EQ(d.config.model.external_model.model_name, "");
  const LoadResult r =
      load(yaml("gpt-4o", "external_model: {enable: true, base_url_env: U, api_key_env: K, model_name: m}"));
  EXPECT_TRUE(r.config.model.external_model.enable);
  EXPECT_EQ(r.config.model.external_model.base_url_env, "U");
  EXPECT_EQ(r.config.model.external_model.api_key_env, "K");
  EXPECT_EQ(r.config.model.external_model.model_name, "m");
  EXPECT_FALSE(has_warning(r, "external_model"));
  EXPECT_EQ(load(yaml("\"\"", "external_model: {enable: true, model_name: m}")).config.model.model_path, "");
  expect_has(load_error(yaml("\"\"", "external_model: {enable: true}")),
             {"model.external_model.model_name: is required when model.model_path is empty"});
  expect_has(load_error(yaml("m", "external_model: {enable: true, base_url: http://x}")),
             {"unknown key 'model.external_model.base_url'", "base_url_env"});
  expect_has(load_error(base_yaml(), {"model.external_model.enable=true"}),
             {"[config]", "model.external_model.enable: an external model is bench-mode only", "'both'"});
}
