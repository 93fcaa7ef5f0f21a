// Rollout correction (decoupled mode) in the trainer: with rollout logprobs equal to the trainer's the
// mismatch is 0 and the step equals bypass mode; shifted rollout logprobs give the expected mismatch
// metrics and importance weights (token and sequence level, truncated at the threshold), which scale
// the policy loss and its gradient; invalid combinations are clear errors.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "trainer/trainer.h"
#include "trainer_test_util.h"

using namespace trinity;
using namespace trinity::trainer;

namespace {

// 2 groups of 4 runs, prompts of 3 tokens, responses of 4; rollout logprobs = the model's own
// (temperature 1) plus `shift`.
std::vector<buffer::Experience> batch_with_shift(const model::Transformer& base, double shift) {
  Rng rng(3);
  std::vector<buffer::Experience> b;
  model::Transformer m = clone(base, model::WeightStorage::kF32);
  for (int task = 0; task < 2; ++task)
    for (int run = 0; run < 4; ++run) {
      buffer::Experience e = test::make_exp(rng, 3, 4, 37, task, run, (run + task) % 2 ? 1.0 : 0.0);
      std::vector<float> lp, ent;
      m.forward(model::Batch::next_token({e.tokens}), lp, ent);
      for (size_t t = 0; t < e.logprobs.size(); ++t)
        e.logprobs[t] = static_cast<float>(lp[static_cast<size_t>(e.prompt_length) - 1 + t] + shift);
      b.push_back(std::move(e));
    }
  return b;
}

PolicyTrainer make(const std::string& rollout_is, bool bypass, double threshold = 2.0) {
  algo::AlgorithmSpec spec;
  spec.algorithm_type = "grpo_verl";
  spec.kl_loss_fn = "none";
  TrainerOptions o;
  o.optim.lr = 1e-2;
  o.grad_clip = 0;  // compare raw gradient norms
  o.rollout_correction.bypass_mode = bypass;
  o.rollout_correction.rollout_is = rollout_is;
  o.rollout_correction.rollout_is_threshold = threshold;
  return PolicyTrainer(test::tiny_model(), spec, o);
}

}  // namespace

TEST(RolloutCorrection, EqualLogprobsMeanNoMismatchAndTheBypassStep) {
  const model::Transformer base = test::tiny_model();
  PolicyTrainer a = make("", true), b = make("token", false);
  const auto ma = a.train_step(batch_with_shift(base, 0.0), 1);
  const auto mb = b.train_step(batch_with_shift(base, 0.0), 1);
  EXPECT_NEAR(mb.at("rollout_corr/kl"), 0.0, 1e-6);
  EXPECT_NEAR(mb.at("rollout_corr/ratio_max"), 1.0, 1e-5);
  EXPECT_NEAR(mb.at("rollout_corr/is_weight_mean"), 1.0, 1e-5);
  EXPECT_EQ(mb.at("rollout_corr/is_truncated_frac"), 0.0);
  EXPECT_FALSE(ma.count("rollout_corr/kl")) << "bypass mode computes no mismatch";
  EXPECT_NEAR(ma.at("actor/pg_loss"), mb.at("actor/pg_loss"), 1e-6);
  EXPECT_NEAR(ma.at("actor/grad_norm"), mb.at("actor/grad_norm"), 1e-5 * ma.at("actor/grad_norm"));
}

TEST(RolloutCorrection, TokenWeightsScaleThePolicyGradientAndTruncate) {
  const model::Transformer base = test::tiny_model();
  // The rollout policy gave every token 0.3 less logprob: pi_old / pi_rollout = e^0.3 on every token.
  PolicyTrainer plain = make("", false), tis = make("token", false);
  const auto mp = plain.train_step(batch_with_shift(base, -0.3), 1);
  const auto mt = tis.train_step(batch_with_shift(base, -0.3), 1);
  const double w = std::exp(0.3);
  EXPECT_NEAR(mp.at("rollout_corr/kl"), -0.3, 1e-5);  // mean(log pi_rollout - log pi_old)
  EXPECT_NEAR(mp.at("rollout_corr/ratio_mean"), w, 1e-4);
  EXPECT_NEAR(mp.at("rollout_corr/k3_kl"), std::exp(-0.3) - 1 + 0.3, 1e-5);
  EXPECT_NEAR(mt.at("rollout_corr/is_weight_mean"), w, 1e-4);
  // The old logprobs are the trainer's in both, so the only difference is the weight (pg_loss itself is
  // ~0 here: group-normalised advantages at ratio 1; its gradient is not).
  EXPECT_GT(mp.at("actor/grad_norm"), 1e-4);
  EXPECT_NEAR(mt.at("actor/grad_norm"), w * mp.at("actor/grad_norm"), 1e-4 * mp.at("actor/grad_norm"));
  // A 2.0 shift: e^2 = 7.39 > C = 2, so every weight is truncated to 2.
  PolicyTrainer plain2 = make("", false), tis2 = make("token", false);
  const auto mp2 = plain2.train_step(batch_with_shift(base, -2.0), 1);
  const auto mt2 = tis2.train_step(batch_with_shift(base, -2.0), 1);
  EXPECT_EQ(mt2.at("rollout_corr/is_truncated_frac"), 1.0);
  EXPECT_NEAR(mt2.at("rollout_corr/is_weight_mean"), 2.0, 1e-6);
  EXPECT_NEAR(mt2.at("actor/grad_norm"), 2.0 * mp2.at("actor/grad_norm"), 1e-4 * mp2.at("actor/grad_norm"));
}

TEST(RolloutCorrection, SequenceWeightsUseTheProductOfRatios) {
  const model::Transformer base = test::tiny_model();
  // 4 response tokens each 0.1 below: the sequence ratio is e^0.4 = 1.49 (< C = 2), on every token.
  PolicyTrainer plain = make("", false), tis = make("sequence", false);
  const auto mp = plain.train_step(batch_with_shift(base, -0.1), 1);
  const auto mt = tis.train_step(batch_with_shift(base, -0.1), 1);
  EXPECT_NEAR(mt.at("rollout_corr/is_weight_mean"), std::exp(0.4), 1e-4);
  EXPECT_NEAR(mt.at("actor/grad_norm"), std::exp(0.4) * mp.at("actor/grad_norm"), 1e-4 * mp.at("actor/grad_norm"));
  // With C = 1.2 every sequence weight is truncated.
  PolicyTrainer low = make("sequence", false, 1.2);
  EXPECT_EQ(low.train_step(batch_with_shift(base, -0.1), 1).at("rollout_corr/is_truncated_frac"), 1.0);
}

TEST(RolloutCorrection, InvalidCombinationsAreClearErrors) {
  EXPECT_THROW(make("token", true), ConfigError);  // IS needs the recomputed old logprobs
  EXPECT_THROW(make("geometric", false), ConfigError);
  EXPECT_THROW(make("token", false, 0.0), ConfigError);
  algo::AlgorithmSpec spec;
  spec.algorithm_type = "sft";
  TrainerOptions o;
  o.rollout_correction.bypass_mode = false;
  o.rollout_correction.rollout_is = "token";
  try {
    PolicyTrainer t(test::tiny_model(), spec, o);
    FAIL() << "accepted rollout_is with the sft loss";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("policy_loss_fn sft"), std::string::npos) << e.what();
  }
}
