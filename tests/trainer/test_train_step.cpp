// PolicyTrainer::train_step on tiny models: gradients independent of the micro-batch split, the GRPO
// gradient equal to a hand-built d(loss)/d(logprob) pushed through Transformer::backward, PPO's critic
// fitting the returns, a DPO step with the reference model, and shared prompts changing nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "pipeline/advantages.h"
#include "pipeline/experience_batch.h"
#include "trainer/packed_batch.h"
#include "trainer/trainer.h"
#include "trainer_test_util.h"

using namespace trinity;
using namespace trinity::trainer;
using namespace trinity::pipeline;

namespace {

algo::AlgorithmSpec spec_of(const std::string& type) {
  algo::AlgorithmSpec s;
  s.algorithm_type = type;
  return s;
}

// A GRPO batch with explorer-side advantages: 3 tasks x 2 runs of varying lengths.
std::vector<buffer::Experience> grpo_batch(uint64_t seed) {
  Rng rng(seed);
  std::vector<buffer::Experience> exps;
  for (int task = 0; task < 3; ++task)
    for (int run = 0; run < 2; ++run)
      exps.push_back(test::make_exp(rng, 2 + task, 3 + 2 * run + task, 37, task, run, run == 0 ? 1.0 : 0.0));
  algo::Algorithm alg(spec_of("grpo"));
  Rng arng(1);
  compute_advantages(alg, exps, arng);
  return exps;
}

double max_abs_diff(const float* a, const float* b, int64_t n) {
  double d = 0;
  for (int64_t i = 0; i < n; ++i) d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  return d;
}

TEST(TrainStep, MicroBatchSplitDoesNotChangeGradientsOrWeights) {
  const auto batch = grpo_batch(11);
  TrainerOptions one;
  one.optim.lr = 1e-6;
  TrainerOptions three = one;
  three.micro_batch_size = 2;  // 6 rows -> 3 micro-batches
  TrainerOptions budget = one;
  budget.max_token_len_per_gpu = 20;
  PolicyTrainer a(test::tiny_model(), spec_of("grpo"), one), b(test::tiny_model(), spec_of("grpo"), three),
      c(test::tiny_model(), spec_of("grpo"), budget);
  const auto ma = a.train_step(batch, 1), mb = b.train_step(batch, 1), mc = c.train_step(batch, 1);
  EXPECT_EQ(ma.at("perf/micro_batches"), 1);
  EXPECT_EQ(mb.at("perf/micro_batches"), 3);
  EXPECT_GT(mc.at("perf/micro_batches"), 1);
  const int64_t n = a.actor().num_params();
  EXPECT_LT(max_abs_diff(a.actor().grads(), b.actor().grads(), n), 1e-5);
  EXPECT_LT(max_abs_diff(a.actor().grads(), c.actor().grads(), n), 1e-5);
  EXPECT_LT(max_abs_diff(a.actor().params(), b.actor().params(), n), 1e-5);
  EXPECT_LT(max_abs_diff(a.actor().params(), c.actor().params(), n), 1e-5);
  for (const char* k : {"actor/pg_loss", "actor/kl_loss", "actor/entropy", "actor/final_loss", "actor/grad_norm"}) {
    ASSERT_TRUE(ma.count(k)) << k;
    EXPECT_NEAR(ma.at(k), mb.at(k), 1e-5) << k;
  }
  for (const char* k : {"actor/lr", "response_length/mean", "prompt_length/max", "critic/score/mean",
                        "critic/advantages/mean", "sample/model_version/mean", "perf/total_num_tokens",
                        "perf/throughput", "time/update_actor", "time/ref", "time/train_step"})
    EXPECT_TRUE(ma.count(k)) << k;
  EXPECT_DOUBLE_EQ(ma.at("response_length/max"), 7);  // task 2, run 1: 3 + 2 + 2
}

TEST(TrainStep, GrpoGradientEqualsHandBuiltLossGradient) {
  auto batch = grpo_batch(12);
  const double temp = 0.7;
  // Old logprobs = current ones (ratio 1, no clipping) computed at the rollout temperature, shifted
  // for half the rows so the ratio differs from 1 inside the clip range.
  model::Transformer ref = test::tiny_model();
  const ExperienceBatch eb = make_batch(batch);
  std::vector<float> lp, ent;
  ref.forward(trainer::packed_batch(eb, 0, eb.B, false), lp, ent, static_cast<float>(1.0 / temp));
  for (int64_t b = 0; b < eb.B; ++b)
    for (int64_t t = 0; t < eb.resp_len[static_cast<size_t>(b)]; ++t)
      batch[static_cast<size_t>(b)].logprobs[static_cast<size_t>(t)] =
          lp[static_cast<size_t>(eb.resp_offset[static_cast<size_t>(b)] + t)] + (b % 2 ? 0.05f : 0.0f);
  auto spec = spec_of("grpo");
  spec.kl_loss_fn = "none";
  spec.entropy_loss_fn = "none";
  TrainerOptions o;
  o.optim.lr = 0;  // keep the weights: compare gradients
  o.grad_clip = 0;
  o.temperature = temp;
  PolicyTrainer tr(test::tiny_model(), spec, o);
  const auto m = tr.train_step(batch, 1);
  // Token-mean PPO: L = Σ m·(−A·r) / Σm, r = exp(lp − old); dL/dlp = −A·r / N for unclipped tokens.
  double ntok = 0;
  for (const auto& e : batch) ntok += static_cast<double>(e.response_length());
  std::vector<float> dlp(lp.size());
  double loss = 0;
  size_t k = 0;
  for (const auto& e : batch)
    for (int64_t t = 0; t < e.response_length(); ++t, ++k) {
      const double r = std::exp(static_cast<double>(lp[k]) - e.logprobs[static_cast<size_t>(t)]);
      loss += -e.advantages[static_cast<size_t>(t)] * r / ntok;
      dlp[k] = static_cast<float>(-e.advantages[static_cast<size_t>(t)] * r / ntok);
    }
  ref.zero_grad();
  ref.backward(dlp, {});
  EXPECT_NEAR(m.at("actor/pg_loss"), loss, 1e-5);
  const int64_t n = ref.num_params();
  double gmax = 0;
  for (int64_t i = 0; i < n; ++i) gmax = std::max(gmax, std::fabs(static_cast<double>(ref.grads()[i])));
  ASSERT_GT(gmax, 1e-4);
  EXPECT_LT(max_abs_diff(ref.grads(), tr.actor().grads(), n), 1e-5 * std::max(1.0, gmax));
  EXPECT_TRUE(test::same_params(ref, tr.actor()));  // lr 0
}

TEST(TrainStep, PpoCriticValueLossDecreases) {
  Rng rng(21);
  std::vector<buffer::Experience> batch;
  for (int task = 0; task < 4; ++task) batch.push_back(test::make_exp(rng, 3, 4, 37, task, 0, task % 2 ? 1.0 : -1.0));
  TrainerOptions o;
  o.optim.lr = 1e-4;
  o.critic_optim.lr = 3e-3;
  o.micro_batch_size = 2;
  PolicyTrainer tr(test::tiny_model(), spec_of("ppo"), o);
  ASSERT_NE(tr.critic(), nullptr);
  ASSERT_EQ(tr.critic()->head(), model::HeadKind::kValue);
  std::vector<double> vf;
  for (int step = 1; step <= 12; ++step) {
    const auto m = tr.train_step(batch, step);
    for (const char* k : {"critic/vf_loss", "critic/grad_norm", "critic/returns/mean", "time/values", "actor/pg_loss"})
      ASSERT_TRUE(m.count(k)) << k;
    ASSERT_TRUE(std::isfinite(m.at("critic/vf_loss")));
    vf.push_back(m.at("critic/vf_loss"));
  }
  EXPECT_LT(vf.back(), 0.5 * vf.front());
  EXPECT_EQ(tr.critic_optimizer()->steps(), 12);
}

TEST(TrainStep, SharedPromptsGiveTheSameStep) {
  // Every task's runs share its prompt. GRPO with a reference (KL), a token budget that splits a
  // group across micro-batches, and PPO (critic values and update on the shared batches too): the
  // same metrics, gradients and weights whether the trainer shares the prompts or not.
  Rng rng(31);
  std::vector<buffer::Experience> batch;
  for (int task = 0; task < 3; ++task) {
    const auto prompt = test::make_exp(rng, 5 + task, 1, 37, task, 0, 0.0);
    for (int run = 0; run < 4; ++run) {
      auto e = test::make_exp(rng, 5 + task, 2 + run, 37, task, run, run % 2 ? 1.0 : 0.0);
      std::copy_n(prompt.tokens.begin(), 5 + task, e.tokens.begin());
      batch.push_back(e);
    }
  }
  for (const char* type : {"grpo", "ppo"}) {
    auto spec = spec_of(type);
    if (std::string(type) == "grpo") spec.kl_loss_fn = "k3";
    std::vector<buffer::Experience> exps = batch;
    if (std::string(type) == "grpo") {
      algo::Algorithm alg(spec);
      Rng arng(1);
      compute_advantages(alg, exps, arng);
    }
    TrainerOptions on;
    on.optim.lr = 1e-3;
    on.critic_optim.lr = 1e-3;
    on.max_token_len_per_gpu = 40;
    TrainerOptions off = on;
    off.share_prompts = false;
    PolicyTrainer a(test::tiny_model(), spec, on), b(test::tiny_model(), spec, off);
    const auto ma = a.train_step(exps, 1), mb = b.train_step(exps, 1);
    EXPECT_GT(ma.at("perf/micro_batches"), 1) << type;
    EXPECT_GT(ma.at("perf/shared_prompt_tokens"), 0) << type;  // some rows shared their prompt
    EXPECT_EQ(mb.at("perf/shared_prompt_tokens"), 0) << type;
    const int64_t n = a.actor().num_params();
    EXPECT_LT(max_abs_diff(a.actor().grads(), b.actor().grads(), n), 1e-5) << type;
    EXPECT_LT(max_abs_diff(a.actor().params(), b.actor().params(), n), 1e-5) << type;  // lr 1e-3: 1 % of a step
    for (const char* k : {"actor/pg_loss", "actor/kl_loss", "actor/entropy", "actor/grad_norm", "critic/vf_loss"}) {
      if (!ma.count(k)) continue;
      EXPECT_NEAR(ma.at(k), mb.at(k), 1e-5) << type << " " << k;
    }
    if (a.critic()) {
      ASSERT_TRUE(ma.count("critic/vf_loss"));
      EXPECT_LT(max_abs_diff(a.critic()->params(), b.critic()->params(), a.critic()->num_params()), 1e-5);
    }
  }
}

TEST(TrainStep, DpoStepWithReference) {
  std::vector<buffer::Experience> batch;
  for (int i = 0; i < 2; ++i) {
    buffer::Experience e;
    e.tokens = {1, 2, 3, static_cast<int32_t>(4 + i)};
    e.prompt_length = 4;
    e.chosen = {5, 6, 7};
    e.rejected = {8, 9};
    batch.push_back(e);
  }
  TrainerOptions o;
  o.optim.lr = 1e-2;
  o.micro_batch_size = 2;  // one pair per micro-batch
  PolicyTrainer tr(test::tiny_model(), spec_of("dpo"), o);
  ASSERT_NE(tr.reference(), nullptr);
  auto m1 = tr.train_step(batch, 1);
  EXPECT_NEAR(m1.at("actor/dpo_loss"), std::log(2.0), 1e-6);  // actor == reference at step 1
  EXPECT_EQ(m1.at("perf/micro_batches"), 2);
  auto m2 = tr.train_step(batch, 2);
  EXPECT_LT(m2.at("actor/dpo_loss"), m1.at("actor/dpo_loss"));
  EXPECT_GT(m2.at("actor/chosen_reward"), m2.at("actor/rejected_reward"));
  // Non-DPO experiences are refused.
  Rng rng(1);
  EXPECT_THROW(tr.train_step({test::make_exp(rng, 2, 2, 37, 0, 0, 1)}, 3), ValueError);
}

TEST(TrainStep, ExplorerAdvantagesMustBePresent) {
  Rng rng(2);
  PolicyTrainer tr(test::tiny_model(), spec_of("grpo"));
  EXPECT_THROW(tr.train_step({test::make_exp(rng, 2, 2, 37, 0, 0, 1)}, 1), ValueError);
}

TEST(TrainStep, SnapshotIsADeepCopy) {
  PolicyTrainer tr(test::tiny_model(), spec_of("grpo"));
  const auto snap = tr.snapshot();
  EXPECT_TRUE(test::same_params(*snap, tr.actor()));
  tr.actor().params()[0] += 1.0f;
  EXPECT_FALSE(test::same_params(*snap, tr.actor()));
}

}  // namespace
