// The stages of PolicyTrainer::train_step run one at a time (train_stages.h): batch preparation
// checks, reference logprobs independent of the micro-batch split, trainer-side advantages equal to
// the algorithm's own, explorer-side advantages required, actor update epochs, batch statistics.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "pipeline/advantages.h"
#include "trainer/train_stages.h"
#include "trainer_test_util.h"

using namespace trinity;
using namespace trinity::trainer;

namespace {

algo::AlgorithmSpec spec_of(const std::string& type) {
  algo::AlgorithmSpec s;
  s.algorithm_type = type;
  return s;
}

// 3 tasks x 2 runs, response lengths 3..8.
std::vector<buffer::Experience> batch_of(uint64_t seed) {
  Rng rng(seed);
  std::vector<buffer::Experience> exps;
  for (int task = 0; task < 3; ++task)
    for (int run = 0; run < 2; ++run)
      exps.push_back(test::make_exp(rng, 2 + task, 3 + 2 * run + task, 37, task, run, run == 0 ? 1.0 : 0.0));
  return exps;
}

}  // namespace

TEST(TrainStages, PrepareStepChecksTheAlgorithmAndSplitsMicroBatches) {
  TrainerOptions o;
  o.micro_batch_size = 4;
  algo::Algorithm grpo(spec_of("grpo")), dpo(spec_of("dpo"));
  const StepBatch s = prepare_step(batch_of(1), grpo, o);
  EXPECT_EQ(s.eb.B, 6);
  EXPECT_EQ(s.ranges, (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 6}}));
  EXPECT_THROW(prepare_step(batch_of(1), dpo, o), ValueError);  // not DPO experiences
  auto no_lp = batch_of(1);
  no_lp[2].logprobs.clear();
  EXPECT_THROW(prepare_step(no_lp, grpo, o), ValueError);  // the ppo loss needs rollout logprobs
}

TEST(TrainStages, PolicyLogprobsDoNotDependOnTheMicroBatchSplit) {
  auto m = test::tiny_model();
  algo::Algorithm alg(spec_of("grpo"));
  TrainerOptions whole, split;
  split.micro_batch_size = 1;
  const auto a = policy_logprobs(m, prepare_step(batch_of(2), alg, whole), 1.0f / 0.7f);
  const StepBatch s = prepare_step(batch_of(2), alg, split);
  const auto b = policy_logprobs(m, s, 1.0f / 0.7f);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], 1e-5) << i;
    if (s.eb.mask[i] == 0)
      EXPECT_EQ(b[i], 0.0f) << "padding stays zero at " << i;
    else
      EXPECT_LT(b[i], 0.0f) << "a logprob at " << i;
  }
}

TEST(TrainStages, TrainerSideAdvantagesEqualTheAlgorithms) {
  algo::Algorithm alg(spec_of("reinforceplusplus"));
  ASSERT_EQ(alg.advantage_location(), algo::AdvLocation::kTrainer);
  TrainerOptions o;
  StepBatch s = prepare_step(batch_of(3), alg, o);
  Rng rng(99);
  const algo::AdvOutput want = alg.compute_advantages(pipeline::adv_input(s.eb), rng);
  algo::Metrics m;
  advantages(alg, s, 99, o, m);
  EXPECT_EQ(s.eb.advantages, want.advantages);
  EXPECT_TRUE(m.has("time/adv"));
  // A pending reward is an error, not a silent zero.
  StepBatch p = prepare_step(batch_of(3), alg, o);
  p.exps[1].reward.reset();
  EXPECT_THROW(advantages(alg, p, 99, o, m), ValueError);
}

TEST(TrainStages, ExplorerSideAdvantagesMustComeWithTheExperiences) {
  algo::Algorithm alg(spec_of("grpo"));
  TrainerOptions o;
  algo::Metrics m;
  StepBatch bare = prepare_step(batch_of(4), alg, o);
  EXPECT_THROW(advantages(alg, bare, 1, o, m), ValueError);
  auto exps = batch_of(4);
  Rng arng(1);
  pipeline::compute_advantages(alg, exps, arng);
  StepBatch s = prepare_step(exps, alg, o);
  advantages(alg, s, 1, o, m);
  EXPECT_DOUBLE_EQ(m.get("critic/score/mean"), 0.5);
  EXPECT_FALSE(m.has("time/adv"));
}

TEST(TrainStages, UpdateActorTakesOneOptimizerStepPerEpoch) {
  auto actor = test::tiny_model();
  const auto before = test::tiny_model();
  algo::Algorithm alg(spec_of("grpo"));
  TrainerOptions o;
  o.ppo_epochs = 3;
  o.optim.lr = 1e-3;
  auto exps = batch_of(5);
  Rng arng(1);
  pipeline::compute_advantages(alg, exps, arng);
  StepBatch s = prepare_step(exps, alg, o);
  s.ref_lp = policy_logprobs(actor, s, 1.0f);  // grpo's KL loss reads the reference
  AdamW opt(actor.num_params(), o.optim);
  const algo::Metrics m = update_actor(actor, opt, alg, s, o, 1);
  EXPECT_EQ(opt.steps(), 3);
  EXPECT_TRUE(std::isfinite(m.get("actor/grad_norm")));
  EXPECT_GT(m.get("actor/grad_norm"), 0.0);
  double moved = 0;
  for (int64_t i = 0; i < actor.num_params(); ++i) moved += std::fabs(actor.params()[i] - before.params()[i]);
  EXPECT_GT(moved, 0.0);
}

TEST(TrainStages, BatchStatsCountResponsesAndTokens) {
  algo::Algorithm alg(spec_of("grpo"));
  TrainerOptions o;
  o.max_response_tokens = 6;  // lengths 6 and 7 reach the limit
  const StepBatch s = prepare_step(batch_of(6), alg, o);
  algo::Metrics m;
  batch_stats(m, s, alg, o);
  // Response lengths 3, 5, 4, 6, 5, 7; prompts 2, 2, 3, 3, 4, 4.
  EXPECT_DOUBLE_EQ(m.get("response_length/mean"), 30.0 / 6);
  EXPECT_DOUBLE_EQ(m.get("response_length/clip_ratio"), 2.0 / 6);
  EXPECT_DOUBLE_EQ(m.get("perf/total_num_tokens"), 30.0 + 18.0);
}
