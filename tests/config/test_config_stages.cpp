// Multi-stage configs (trinity-rft.md §2.12): each stage is the global config with the stage's
// sections replaced wholesale; name becomes name/stage_name; with_model_path re-derives.
#include "config_test_util.h"

using namespace trinity::config;
using namespace trinity::config::testing;

namespace {
const std::string kStages =
    "stages:\n"
    "  - stage_name: sft_warmup\n"
    "    mode: train\n"
    "    algorithm: {algorithm_type: sft}\n"
    "    buffer:\n"
    "      train_batch_size: 16\n"
    "      trainer_input:\n"
    "        experience_buffer: {name: warm, storage_type: file, path: /d/sft.jsonl}\n"
    "  - stage_name: rft\n";
}

TEST(ConfigStages, SectionsReplacedWholesale) {
  const LoadResult r = load(base_yaml(kStages + "trainer: {save_hf_checkpoint: never, save_interval: 5}\n"));
  ASSERT_EQ(r.config.stages.size(), 2u);
  EXPECT_EQ(r.config.stages[0].stage_name, "sft_warmup");
  EXPECT_EQ(r.config.stages[0].sections, (std::vector<std::string>{"algorithm", "buffer"}));
  ASSERT_EQ(r.stages.size(), 2u);
  const Config& s0 = r.stages[0];
  EXPECT_EQ(s0.name, "rft/sft_warmup");
  EXPECT_EQ(s0.job_dir(), "/tmp/ckpt/Trinity-RFT/rft/sft_warmup");
  EXPECT_EQ(s0.mode, "train");
  EXPECT_EQ(s0.algorithm.algorithm_type, "sft");
  EXPECT_EQ(s0.repeat_times, 1);                 // not merged with the global repeat_times: 8
  EXPECT_DOUBLE_EQ(s0.optimizer.lr, 1e-6);       // the whole algorithm section was replaced
  EXPECT_EQ(s0.buffer.batch_size, 1);            // the whole buffer section was replaced
  EXPECT_TRUE(s0.buffer.explorer_input.tasksets.empty());
  EXPECT_EQ(s0.buffer.trainer_input.experience_buffer.name, "warm");
  EXPECT_EQ(s0.trainer.save_hf_checkpoint, "last");  // forced
  EXPECT_EQ(s0.trainer.save_interval, 5);            // trainer section not replaced: global kept
  EXPECT_EQ(s0.synchronizer.sync_method, "checkpoint");
  const Config& s1 = r.stages[1];
  EXPECT_EQ(s1.name, "rft/rft");
  EXPECT_EQ(s1.algorithm.algorithm_type, "grpo");
  EXPECT_EQ(s1.buffer.train_batch_size, 768);
  EXPECT_EQ(s1.trainer.save_hf_checkpoint, "last");
  EXPECT_EQ(r.config.trainer.save_hf_checkpoint, "never");  // the global config is unchanged
}

TEST(ConfigStages, ErrorsNameTheStage) {
  expect_has(load_error(base_yaml("stages:\n  - stage_name: a\n    algoritm: {algorithm_type: sft}\n")),
             {"cfg.yaml:18", "stages[0].algoritm", "did you mean 'algorithm'"});
  expect_has(load_error(base_yaml("stages:\n  - mode: train\n")), {"stages[0].stage_name is required"});
  expect_has(load_error(base_yaml("stages:\n  - stage_name: a\n    algorithm: {algorithm_type: sft}\n")),
             {"stage 'a'", "train_batch_size is required"});
}

TEST(ConfigStages, WithModelPathRederives) {
  const LoadResult r = load(base_yaml(kStages));
  const Config next = with_model_path(r.stages[1], "/ckpt/stage0/hf");
  EXPECT_EQ(next.model.model_path, "/ckpt/stage0/hf");
  EXPECT_EQ(next.model.critic_model_path, "/ckpt/stage0/hf");
  EXPECT_EQ(next.name, "rft/rft");
  EXPECT_EQ(next.buffer.train_batch_size, 768);
  const LoadResult crit = load(base_yaml("trainer: {save_interval: 1}\n"), {"model.critic_model_path=/crit"});
  EXPECT_EQ(with_model_path(crit.config, "/new").model.critic_model_path, "/crit");
}
