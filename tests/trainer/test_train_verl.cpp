// Trainer-side advantages that need more than rewards: clipb reads the actor's entropy and edits the
// trained action mask, remax reads info.reward_baseline, clipv (no nec from the LM head) is refused.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "pipeline/advantages.h"
#include "trainer/train_stages.h"
#include "trainer_test_util.h"

using namespace trinity;
using namespace trinity::trainer;

namespace {

algo::AlgorithmSpec verl_spec(const std::string& adv, algo::ArgMap args = {}) {
  algo::AlgorithmSpec s;
  s.algorithm_type = "grpo_verl";
  s.advantage_fn = adv;
  s.advantage_fn_args = std::move(args);
  return s;
}

// 3 tasks x 2 runs; run 0 has reward 1, run 1 reward 0 (negative advantages).
std::vector<buffer::Experience> batch_of(uint64_t seed, const std::string& info = "") {
  Rng rng(seed);
  std::vector<buffer::Experience> exps;
  for (int task = 0; task < 3; ++task)
    for (int run = 0; run < 2; ++run) {
      exps.push_back(test::make_exp(rng, 2 + task, 4 + run + task, 37, task, run, run == 0 ? 1.0 : 0.0));
      exps.back().info = info;
    }
  return exps;
}

}  // namespace

TEST(TrainVerl, ClipBDropsNegativeAdvantageTokensFromTheTrainedMask) {
  auto actor = test::tiny_model();
  algo::Algorithm alg(verl_spec("clipb", {{"mu", 0.0}}));  // μ = 0: every below-mean A < 0 token goes
  ASSERT_EQ(alg.advantage_location(), algo::AdvLocation::kTrainer);
  TrainerOptions o;
  StepBatch s = prepare_step(batch_of(7), alg, o);
  const std::vector<float> mask0 = s.eb.mask;
  policy_logprobs(actor, s, 1.0f, &s.entropy);
  algo::AdvInput in = pipeline::adv_input(s.eb);
  in.entropy = s.entropy;
  Rng rng(7);
  const algo::AdvOutput want = alg.compute_advantages(in, rng);
  algo::Metrics m;
  advantages(alg, s, 7, o, m);
  EXPECT_EQ(s.eb.mask, want.mask);
  int dropped = 0;
  for (size_t i = 0; i < mask0.size(); ++i) {
    if (mask0[i] != 0 && s.eb.mask[i] == 0) {
      ++dropped;
      EXPECT_LT(s.eb.advantages[i], 0.0f) << "only negative-advantage tokens are dropped, index " << i;
    }
    EXPECT_LE(s.eb.mask[i], mask0[i]) << i;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_GT(m.get("frac_clipped_neg"), 0.0);
  EXPECT_EQ(m.get("frac_clipped_pos"), 0.0);
  // Without the entropy the function says what it misses.
  StepBatch bare = prepare_step(batch_of(7), alg, o);
  try {
    advantages(alg, bare, 7, o, m);
    ADD_FAILURE() << "clipb ran without entropy";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("entropy"), std::string::npos) << e.what();
  }
}

TEST(TrainVerl, ClipBTrainStepComputesTheEntropy) {
  TrainerOptions o;
  PolicyTrainer tr(test::tiny_model(), verl_spec("clipb", {{"mu", 0.5}}), o);
  const auto m = tr.train_step(batch_of(8), 1);
  EXPECT_TRUE(m.count("time/entropy"));
  EXPECT_TRUE(m.count("frac_clipped"));
  EXPECT_TRUE(std::isfinite(m.at("actor/pg_loss")));
}

TEST(TrainVerl, RemaxReadsTheBaselineFromTheExperienceInfo) {
  algo::Algorithm alg(verl_spec("remax"));
  TrainerOptions o;
  StepBatch s = prepare_step(batch_of(9, R"({"reward_baseline": 0.25})"), alg, o);
  algo::Metrics m;
  advantages(alg, s, 9, o, m);
  // The reward sits on the last token, so every action token's return is r and A = r − 0.25.
  for (int64_t b = 0; b < s.eb.B; ++b)
    for (int64_t t = 0; t < s.eb.T; ++t)
      if (s.eb.mask[s.eb.at(b, t)] != 0) {
        EXPECT_NEAR(s.eb.advantages[s.eb.at(b, t)], s.eb.rewards[static_cast<size_t>(b)] - 0.25, 1e-6);
      }
  StepBatch none = prepare_step(batch_of(9), alg, o);
  try {
    advantages(alg, none, 9, o, m);
    ADD_FAILURE() << "remax ran without a baseline";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("reward_baseline"), std::string::npos) << e.what();
  }
}

TEST(TrainVerl, ClipVIsRefusedWithTheReason) {
  try {
    PolicyTrainer tr(test::tiny_model(), verl_spec("clipv"), TrainerOptions{});
    ADD_FAILURE() << "clipv accepted";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("nec"), std::string::npos) << e.what();
  }
}
