// Config compatibility with upstream Trinity-RFT configs (issue: drop-in): things upstream accepts are
// accepted (a train and an eval taskset of the same name, max_token_len_per_gpu below max_model_len,
// ${oc.decode:...}, sync_style fully_async, a queue path that is not a database), the async pair's queue
// with a database path is shared across processes, and keys that would change results are not silent
// (lora_configs are read; trainer.trainer_config keys are mapped or warned about one by one).
#include <cstdlib>

#include "config_test_util.h"

using namespace trinity::config;
using namespace trinity::config::testing;

TEST(ConfigCompat, TrainAndEvalTasksetMayShareAName) {
  const std::string eval = "    eval_tasksets:\n      - {name: gsm8k, path: /data/gsm8k, split: test}\n";
  std::string y = base_yaml();
  y.insert(y.find("    default_workflow_type"), eval);
  const LoadResult ok = load(y);
  ASSERT_EQ(ok.config.buffer.explorer_input.eval_tasksets.size(), 1u);
  EXPECT_EQ(ok.config.buffer.explorer_input.eval_tasksets[0].name, "gsm8k");
  // Two eval tasksets of one name would write the same eval/<name>/ metrics: still an error.
  std::string twice = base_yaml();
  twice.insert(twice.find("    default_workflow_type"),
               "    eval_tasksets:\n      - {name: e, path: /data/a}\n      - {name: e, path: /data/b}\n");
  expect_has(load_error(twice), {"eval_tasksets[1]", "taskset name 'e' is used twice"});
}

TEST(ConfigCompat, TokenBudgetBelowMaxModelLenIsAWarningNotAnError) {
  const LoadResult r = load(base_yaml("trainer:\n  max_token_len_per_gpu: 1024\n"));
  EXPECT_EQ(r.config.trainer.max_token_len_per_gpu, 1024);
  EXPECT_TRUE(has_warning(r, "trainer.max_token_len_per_gpu 1024 is below model.max_model_len (2048)"));
}

TEST(ConfigCompat, OcDecodeAndNestedInterpolation) {
  ::unsetenv("TRINITY_COMPAT_N");
  std::string y = base_yaml();
  y.replace(y.find("repeat_times: 8"), 15, "repeat_times: ${oc.decode:${oc.env:TRINITY_COMPAT_N,4}}");
  LoadResult r = load(y);
  EXPECT_EQ(r.config.repeat_times, 4);
  ::setenv("TRINITY_COMPAT_N", "6", 1);
  r = load(y);
  EXPECT_EQ(r.config.repeat_times, 6);
  ::unsetenv("TRINITY_COMPAT_N");
  // oc.decode of a quoted number gives the number; of a list, the list.
  std::string z = base_yaml("synchronizer:\n  sync_interval: ${oc.decode:'3'}\n");
  EXPECT_EQ(load(z).config.synchronizer.sync_interval, 3);
  // A reference nested in an env default resolves first.
  std::string w = base_yaml(
      "trainer:\n  save_interval: ${oc.env:TRINITY_COMPAT_UNSET,${synchronizer.sync_interval}}\n"
      "synchronizer:\n  sync_interval: 5\n");
  EXPECT_EQ(load(w).config.trainer.save_interval, 5);
  expect_has(load_error(base_yaml("project: ${oc.decode:${oc.env:TRINITY_COMPAT_N}\n")), {"unterminated '${'"});
}

TEST(ConfigCompat, FullyAsyncSyncStyle) {
  const LoadResult r = load(base_yaml("synchronizer:\n  sync_style: fully_async\n"));
  EXPECT_EQ(r.config.synchronizer.sync_style, "fully_async");
  expect_has(load_error(base_yaml("synchronizer:\n  sync_style: sometimes\n")),
             {"synchronizer.sync_style", "sometimes"});
}

TEST(ConfigCompat, QueueBufferPaths) {
  const std::string queue = "  trainer_input:\n    experience_buffer:\n      name: q\n      storage_type: queue\n";
  // Not a database URL: a warning, and the queue stays in memory (as upstream).
  LoadResult r = load(base_yaml() + queue + "      path: /tmp/somewhere/queue_dir\n");
  EXPECT_EQ(r.config.buffer.trainer_input.experience_buffer.storage_type, "queue");
  EXPECT_EQ(r.config.buffer.trainer_input.experience_buffer.path, "");
  EXPECT_TRUE(has_warning(r, "is not a database URL"));
  // The async pair (upstream examples/async_gsm8k): a queue with a database path in mode explore / train
  // is that database, shared by both processes.
  for (const char* mode : {"explore", "train"}) {
    r = load(base_yaml() + queue + "      path: 'sqlite:////tmp/trinity_compat_q.db'\n", {std::string("mode=") + mode});
    EXPECT_EQ(r.config.buffer.trainer_input.experience_buffer.storage_type, "sql") << mode;
    EXPECT_EQ(r.config.buffer.trainer_input.experience_buffer.path, "sqlite:////tmp/trinity_compat_q.db") << mode;
  }
  // In one process (mode both) the queue stays a queue, mirrored to the database.
  r = load(base_yaml() + queue + "      path: 'sqlite:////tmp/trinity_compat_q.db'\n");
  EXPECT_EQ(r.config.buffer.trainer_input.experience_buffer.storage_type, "queue");
  // A queue without a database cannot connect two processes: an error, not a trainer that waits forever.
  expect_has(load_error(base_yaml() + queue, {"mode=train"}),
             {"buffer.trainer_input.experience_buffer", "mode train", "sqlite:///"});
}

// Inserts `lines` (indented for the model section) after "model:".
std::string with_model_keys(const std::string& lines) {
  std::string y = base_yaml();
  y.insert(y.find("model:\n") + 7, lines);
  return y;
}

TEST(ConfigCompat, LoraConfigsAreRead) {
  // Trinity's grpo_lora_gsm8k form: one entry, defaults for the rest.
  LoadResult r = load(with_model_keys("  lora_configs:\n    - {name: lora, lora_rank: 16, lora_alpha: 32}\n"));
  ASSERT_TRUE(r.config.model.lora.has_value());
  EXPECT_EQ(r.config.model.lora->name, "lora");
  EXPECT_EQ(r.config.model.lora->lora_rank, 16);
  EXPECT_DOUBLE_EQ(r.config.model.lora->lora_alpha, 32.0);
  EXPECT_EQ(r.config.model.lora->target_modules, std::vector<std::string>{"all-linear"});
  r =
      load(with_model_keys("  lora_configs:\n    - lora_rank: 8\n      target_modules: [q_proj, v_proj]\n"
                           "      lora_dropout: 0.05\n"));
  EXPECT_EQ(r.config.model.lora->target_modules, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_DOUBLE_EQ(r.config.model.lora->lora_dropout, 0.05);
  EXPECT_FALSE(load(base_yaml()).config.model.lora.has_value());
  // Bad values name the key.
  expect_has(load_error(with_model_keys("  lora_configs:\n    - {lora_rank: 0}\n")),
             {"model.lora_configs[0].lora_rank", "must be >= 1"});
  expect_has(load_error(with_model_keys("  lora_configs:\n    - {target_modules: [qkv]}\n")),
             {"unknown module 'qkv'", "all-linear"});
  expect_has(load_error(with_model_keys("  lora_configs:\n    - {lora_rank: 8}\n    - {lora_rank: 4}\n")),
             {"at most one"});
  expect_has(load_error(with_model_keys("  lora_configs:\n    - {lora_rnak: 8}\n")), {"lora_rnak", "lora_rank"});
}

TEST(ConfigCompat, RolloutCorrectionKeys) {
  const auto& d = load(base_yaml()).config.trainer.rollout_correction;
  EXPECT_TRUE(d.bypass_mode);
  EXPECT_EQ(d.rollout_is, "");
  EXPECT_DOUBLE_EQ(d.rollout_is_threshold, 2.0);
  // verl's place for it, inside trainer_config.
  const std::string tc =
      "trainer:\n  trainer_config:\n    algorithm:\n      rollout_correction:\n"
      "        bypass_mode: false\n        rollout_is: sequence\n        rollout_is_threshold: 3.5\n";
  const auto& v = load(base_yaml(tc)).config.trainer.rollout_correction;
  EXPECT_FALSE(v.bypass_mode);
  EXPECT_EQ(v.rollout_is, "sequence");
  EXPECT_DOUBLE_EQ(v.rollout_is_threshold, 3.5);
  const auto& t = load(base_yaml("trainer:\n  rollout_correction: {bypass_mode: false, rollout_is: token}\n"))
                      .config.trainer.rollout_correction;
  EXPECT_EQ(t.rollout_is, "token");
  expect_has(load_error(base_yaml("trainer:\n  rollout_correction: {rollout_is: geometric}\n")),
             {"trainer.rollout_correction.rollout_is", "geometric", "token, sequence"});
  expect_has(load_error(base_yaml("trainer:\n  rollout_correction: {rollout_rs: token}\n")), {"rollout_rs"});
}

TEST(ConfigCompat, GradientCheckpointingKeys) {
  EXPECT_FALSE(load(base_yaml()).config.trainer.gradient_checkpointing);
  const std::string tc =
      "trainer:\n  trainer_config:\n    actor_rollout_ref:\n      model:\n        enable_gradient_checkpointing: "
      "true\n";
  EXPECT_TRUE(load(base_yaml(tc)).config.trainer.gradient_checkpointing);
  EXPECT_TRUE(load(base_yaml("trainer:\n  gradient_checkpointing: true\n")).config.trainer.gradient_checkpointing);
}

TEST(ConfigCompat, SharePromptPrefixKey) {
  EXPECT_TRUE(load(base_yaml()).config.trainer.share_prompt_prefix);
  EXPECT_FALSE(load(base_yaml("trainer:\n  share_prompt_prefix: false\n")).config.trainer.share_prompt_prefix);
  expect_has(load_error(base_yaml("trainer:\n  share_prompt_prefix: sometimes\n")), {"trainer.share_prompt_prefix"});
}

TEST(ConfigCompat, VerlTrainerConfigKeysAreMappedOrWarned) {
  const std::string tc =
      "trainer:\n  trainer_config:\n"
      "    actor_rollout_ref:\n      actor:\n        optim: {lr: 3.0e-6}\n        ppo_micro_batch_size_per_gpu: 2\n"
      "        checkpoint: {save_contents: [model]}\n"
      "    critic:\n      optim: {lr: 2.0e-5}\n      cliprange_value: 0.25\n"
      "    trainer:\n      max_actor_ckpt_to_keep: 3\n      balance_batch: false\n";
  LoadResult r = load(base_yaml(tc));
  const Config& c = r.config;
  EXPECT_DOUBLE_EQ(c.trainer.critic.lr, 2e-5);
  EXPECT_DOUBLE_EQ(c.trainer.critic.cliprange_value, 0.25);
  ASSERT_TRUE(c.trainer.max_checkpoints_to_keep.has_value());
  EXPECT_EQ(*c.trainer.max_checkpoints_to_keep, 3);
  EXPECT_EQ(c.trainer.micro_batch_size, 2);
  // algorithm.optimizer.lr is set in base_yaml: the trinity key wins, with a warning.
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 1e-5);
  EXPECT_TRUE(
      has_warning(r, "trainer.trainer_config.actor_rollout_ref.actor.optim.lr is ignored: algorithm.optimizer.lr"));
  // Each key without an equivalent is named once.
  EXPECT_TRUE(has_warning(r, "trainer.trainer_config.actor_rollout_ref.actor.checkpoint.save_contents has no effect"));
  EXPECT_TRUE(has_warning(r, "trainer.trainer_config.trainer.balance_batch has no effect"));
  int n = 0;
  for (const auto& w : r.warnings) n += w.find("balance_batch") != std::string::npos;
  EXPECT_EQ(n, 1);
  // Without algorithm.optimizer.lr, verl's actor lr applies.
  std::string y = base_yaml(tc);
  const std::string opt = "  optimizer:\n    lr: 1.0e-5\n";
  y.erase(y.find(opt), opt.size());
  r = load(y);
  EXPECT_DOUBLE_EQ(r.config.optimizer.lr, 3e-6);
  // A wrong type names the verl key.
  expect_has(load_error(base_yaml("trainer:\n  trainer_config:\n    critic: {optim: {lr: fast}}\n")),
             {"trainer.trainer_config.critic.optim.lr"});
}
