// Advantage-function tests: hand-computed values for every function, group of one, all-equal
// rewards (no NaN), filtering and duplication, an all-masked experience, empty batch errors.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithm/advantage.h"

namespace trinity::algo {
namespace {

// Batch of B rows of length T (all tokens masked unless changed), one scalar advantage per row.
struct Batch {
  int64_t B, T;
  std::vector<float> rewards, mask, old, teacher, values;
  std::vector<std::string> group, run, anchor;
  std::vector<int64_t> run_step, lengths;
  Batch(std::vector<float> r, std::vector<std::string> g, int64_t t = 2)
      : B(static_cast<int64_t>(r.size())), T(t), rewards(std::move(r)), group(std::move(g)) {
    mask.assign(static_cast<size_t>(B * T), 1.0f);
  }
  AdvInput in() const {
    AdvInput a;
    a.B = B, a.T = T;
    a.rewards = rewards, a.mask = mask, a.group = group, a.old_logprob = old, a.teacher_logprob = teacher;
    a.values = values, a.run = run, a.anchor = anchor, a.run_step = run_step, a.lengths = lengths;
    return a;
  }
};

AdvOutput compute(const std::string& name, const Batch& b, ArgMap args = {}, uint64_t seed = 0) {
  Rng rng(seed);
  return advantage_registry().make(name, args)->compute(b.in(), rng);
}

double row_adv(const AdvOutput& o, const Batch& b, int64_t row) { return o.advantages[static_cast<size_t>(row * b.T)]; }

TEST(Advantage, GrpoHandValues) {
  Batch b({1, 0, 0, 1, 5}, {"a", "a", "a", "a", "b"});
  auto o = compute("grpo", b);
  const double sd = std::sqrt(1.0 / 3.0);
  EXPECT_NEAR(row_adv(o, b, 0), 0.5 / (sd + 1e-6), 1e-6);
  EXPECT_NEAR(row_adv(o, b, 1), -0.5 / (sd + 1e-6), 1e-6);
  EXPECT_NEAR(row_adv(o, b, 4), 5.0 / (1 + 1e-6), 1e-6);  // group of one: mean 0, std 1
  EXPECT_EQ(o.rows.size(), 5u);
  EXPECT_NEAR(o.metrics.get("group_advantages/reward_mean/max"), 0.5, 1e-12);
  // Broadcast over tokens; masked tokens get 0.
  b.mask[1] = 0;
  o = compute("grpo", b);
  EXPECT_EQ(o.advantages[1], 0.0f);
  EXPECT_EQ(o.advantages[0], o.returns[0]);
}

TEST(Advantage, AllEqualRewardsGiveZeroNotNan) {
  Batch b({1, 1, 1}, {"g", "g", "g"});
  for (const char* name : {"grpo", "rloo", "opmd", "asymre", "rec", "step_wise_grpo", "reinforceplusplus"}) {
    auto o = compute(name, b);
    for (float a : o.advantages) EXPECT_TRUE(std::isfinite(a)) << name;
    if (std::string(name) != "asymre") {
      for (float a : o.advantages) EXPECT_NEAR(a, 0.0f, 1e-6) << name;
    }
  }
  auto o = compute("opmd", b, {{"opmd_baseline", "logavgexp"}});
  for (float a : o.advantages) EXPECT_NEAR(a, 0.0f, 1e-6);
}

TEST(Advantage, GrpoStdThresholdAndDuplication) {
  Batch b({1, 1, 0, 1, 3}, {"flat", "flat", "x", "x", "single"});
  auto o = compute("grpo", b, {{"std_threshold", 0.0}});
  EXPECT_EQ(o.keep, (std::vector<uint8_t>{0, 0, 1, 1, 0}));
  EXPECT_EQ(o.rows, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(o.metrics.get("filtered_count"), 3.0);
  // POLARIS duplication: each dropped group is replaced by a copy of a surviving group.
  o = compute("grpo", b, {{"std_threshold", 0.0}, {"duplicate_experiences", true}}, 7);
  EXPECT_EQ(o.rows, (std::vector<int64_t>{2, 3, 2, 3, 2, 3}));
  // Everything dropped: empty output.
  Batch flat({1, 1}, {"g", "g"});
  o = compute("grpo", flat, {{"std_threshold", 0.0}, {"duplicate_experiences", true}});
  EXPECT_TRUE(o.rows.empty());
  EXPECT_THROW(compute("grpo", b, {{"duplicate_experiences", true}}), ConfigError);
}

TEST(Advantage, GrpoBatchStdAndRankPenalty) {
  Batch b({1, 0, 2, 0}, {"a", "a", "b", "b"});
  auto o = compute("grpo", b, {{"std_cal_level", "batch"}});
  const double sd = std::sqrt((0.25 * 0.25 + 0.75 * 0.75 + 1.25 * 1.25 + 0.75 * 0.75) / 3.0);  // all rewards, mean 0.75
  EXPECT_NEAR(row_adv(o, b, 0), 0.5 / (sd + 1e-6), 1e-6);
  EXPECT_NEAR(row_adv(o, b, 2), 1.0 / (sd + 1e-6), 1e-6);
  // rank_penalty 0.5: in group a, row 0 has the higher mean logprob (rank 1/2) → r0 = 1·(1 − 0.25).
  Batch c({1, 0}, {"a", "a"});
  c.old = {-0.1f, -0.1f, -2.0f, -2.0f};
  o = compute("grpo", c, {{"rank_penalty", 0.5}});
  const double r0 = 0.75, mu = 0.375, s = std::sqrt(2 * 0.375 * 0.375);
  EXPECT_NEAR(row_adv(o, c, 0), (r0 - mu) / (s + 1e-6), 1e-6);
  EXPECT_NEAR(row_adv(o, c, 1), (0 - mu) / (s + 1e-6), 1e-6);
}

TEST(Advantage, DapoOverlongPenaltyAndFiltering) {
  Batch b({1, 1, 1, 1}, {"g", "g", "g", "g"}, 12);
  b.lengths = {6, 8, 10, 12};
  for (int64_t r = 0; r < b.B; ++r)
    for (int64_t t = b.lengths[static_cast<size_t>(r)]; t < b.T; ++t) b.mask[static_cast<size_t>(r * b.T + t)] = 0;
  // L_max = 10, L_cache = 4: penalties 0, −0.5, −1, −1.
  auto o = compute("dapo", b, {{"max_response_tokens", 10}, {"overlong_buffer_len", 4}});
  EXPECT_NEAR(o.metrics.get("overlong_penalty/min"), -1.0, 1e-12);
  EXPECT_NEAR(o.metrics.get("overlong_penalty/mean"), -2.5 / 4, 1e-12);
  const std::vector<double> r = {1, 0.5, 0, 0};
  const double mu = 0.375, sd = std::sqrt(((0.625 * 0.625) + (0.125 * 0.125) + 2 * (0.375 * 0.375)) / 3);
  for (int64_t k = 0; k < 4; ++k) EXPECT_NEAR(row_adv(o, b, k), (r[static_cast<size_t>(k)] - mu) / (sd + 1e-6), 1e-5);
  EXPECT_THROW(compute("dapo", b), ConfigError);  // needs max_response_tokens
  o = compute("dapo", b, {{"enable_overlong_penalty", false}, {"dynamic_filtering", true}});
  EXPECT_TRUE(o.rows.empty());  // all-equal rewards: the group is filtered
  o = compute("dapo", b, {{"max_response_tokens", 10}, {"overlong_buffer_len", 4}, {"overlong_filtering", true}});
  EXPECT_EQ(o.rows, (std::vector<int64_t>{0, 1}));
}

TEST(Advantage, SimpleBaselines) {
  Batch b({1, 0, 0}, {"g", "g", "g"});
  auto o = compute("rloo", b);
  EXPECT_NEAR(row_adv(o, b, 0), 1.0, 1e-6);
  EXPECT_NEAR(row_adv(o, b, 1), -0.5, 1e-6);
  o = compute("reinforce", b);
  EXPECT_NEAR(row_adv(o, b, 0), 1.0, 1e-6);
  EXPECT_NEAR(row_adv(o, b, 1), 0.0, 1e-6);
  Batch two({0, 1}, {"g", "g"});
  o = compute("opmd", two, {{"opmd_baseline", "logavgexp"}});
  const double base = std::log((1 + std::exp(1.0)) / 2);
  EXPECT_NEAR(row_adv(o, two, 0), -base, 1e-6);
  EXPECT_NEAR(row_adv(o, two, 1), 1 - base, 1e-6);
  o = compute("opmd", two, {{"opmd_baseline", "logavgexp"}, {"tau", 0.5}});
  EXPECT_NEAR(row_adv(o, two, 1), 1 - 0.5 * std::log((1 + std::exp(2.0)) / 2), 1e-6);
  o = compute("asymre", two);
  EXPECT_NEAR(row_adv(o, two, 0), -0.4, 1e-6);
  EXPECT_NEAR(row_adv(o, two, 1), 0.6, 1e-6);
  // Groups of one: rloo/opmd/asymre/rec use a zero baseline (a = r), no error.
  Batch single({2.5}, {"s"});
  for (const char* name : {"rloo", "opmd", "asymre", "rec", "reinforce", "grpo"})
    EXPECT_NEAR(row_adv(compute(name, single), single, 0), 2.5, 5e-6) << name;  // grpo: 2.5/(1 + ε)
}

TEST(Advantage, RecBalanceDrop) {
  Batch b({1, 0, 0, 0}, {"g", "g", "g", "g"});
  auto o = compute("rec", b, {{"drop", "balance"}}, 3);
  // One positive, three negatives: two negatives dropped (a = 0); kept {1, 0}: μ = 0.5.
  EXPECT_NEAR(row_adv(o, b, 0), 0.5, 1e-6);
  int zeros = 0, minus = 0;
  for (int64_t k = 1; k < 4; ++k) {
    const double a = row_adv(o, b, k);
    if (a == 0.0) ++zeros;
    if (std::fabs(a + 0.5) < 1e-6) ++minus;
  }
  EXPECT_EQ(zeros, 2);
  EXPECT_EQ(minus, 1);
  o = compute("rec", b, {{"std_normalize", true}});  // population std of {1,0,0,0} = sqrt(3)/4
  EXPECT_NEAR(row_adv(o, b, 0), 0.75 / (std::sqrt(3.0) / 4 + 1e-6), 1e-5);
  EXPECT_THROW(compute("rec", b, {{"drop", "random"}}), ConfigError);
}

TEST(Advantage, StepWiseGrpo) {
  // Task g: run a has steps (0, 1) with last reward 1; run b has 3 steps, last reward 0.
  Batch b({0, 1, 0, 0, 0}, {"g", "g", "g", "g", "g"});
  b.run = {"a", "a", "b", "b", "b"};
  b.run_step = {0, 1, 0, 1, 2};
  auto o = compute("step_wise_grpo", b);
  const double a = 0.5 / (std::sqrt(0.5) + 1e-6);
  for (int64_t k : {0, 1}) EXPECT_NEAR(row_adv(o, b, k), a, 1e-6);
  for (int64_t k : {2, 3, 4}) EXPECT_NEAR(row_adv(o, b, k), -a, 1e-6);
  o = compute("step_wise_grpo", b, {{"enable_step_norm", true}});
  EXPECT_NEAR(row_adv(o, b, 0), a / 2, 1e-6);
  EXPECT_NEAR(row_adv(o, b, 2), -a / 3, 1e-6);
  // The last step is found by run_step, not list order.
  b.run_step = {1, 0, 0, 1, 2};  // run a's last step is row 0 (reward 0): both runs end at 0
  o = compute("step_wise_grpo", b, {{"std_threshold", 0.0}});
  EXPECT_TRUE(o.rows.empty());
  EXPECT_EQ(o.metrics.get("skipped_group_ratio"), 1.0);
}

TEST(Advantage, Gigpo) {
  // Runs a: states (s0, s1), rewards (0, 1); b: states (s0, s2), rewards (0, 0); γ = 0.5.
  Batch b({0, 1, 0, 0}, {"g", "g", "g", "g"});
  b.run = {"a", "a", "b", "b"};
  b.run_step = {0, 1, 0, 1};
  b.anchor = {"s0", "s1", "s0", "s2"};
  auto o = compute("gigpo", b, {{"gamma", 0.5}});
  const double ae = 0.5 / (std::sqrt(0.5) + 1e-6);         // episode: R = 1 vs 0
  const double as = 0.25 / (std::sqrt(0.125) + 1e-6);      // step returns at s0: 0.5 vs 0
  EXPECT_NEAR(row_adv(o, b, 0), ae + as, 1e-5);
  EXPECT_NEAR(row_adv(o, b, 1), ae, 1e-5);  // s1 is a singleton step group: A_S = 0
  EXPECT_NEAR(row_adv(o, b, 2), -ae - as, 1e-5);
  EXPECT_NEAR(row_adv(o, b, 3), -ae, 1e-5);
  o = compute("gigpo", b, {{"gamma", 0.5}, {"step_advantage_weight", 0.0}});
  EXPECT_NEAR(row_adv(o, b, 0), ae, 1e-5);
  o = compute("gigpo", b, {{"gamma", 0.5}, {"norm", "mean"}});
  EXPECT_NEAR(row_adv(o, b, 0), 0.5 + 0.25, 1e-6);
  Batch no_anchor({0, 1}, {"g", "g"});
  no_anchor.run = {"a", "b"};
  EXPECT_THROW(compute("gigpo", no_anchor), ValueError);
}

TEST(Advantage, GigpoNewerArgumentNames) {
  // Same runs as above. Newer Trinity-RFT: omega = step_advantage_weight; fnorm std | none, where
  // none keeps ε in the denominator ((x − mean)/(1 + ε)), unlike norm: mean ((x − mean)/1).
  Batch b({0, 1, 0, 0}, {"g", "g", "g", "g"});
  b.run = {"a", "a", "b", "b"};
  b.run_step = {0, 1, 0, 1};
  b.anchor = {"s0", "s1", "s0", "s2"};
  const double ae = 0.5 / (std::sqrt(0.5) + 1e-6);
  auto o = compute("gigpo", b, {{"gamma", 0.5}, {"omega", 0.0}});
  EXPECT_NEAR(row_adv(o, b, 0), ae, 1e-5);
  o = compute("gigpo", b, {{"gamma", 0.5}, {"omega", 2.0}});
  EXPECT_NEAR(row_adv(o, b, 0), ae + 2 * 0.25 / (std::sqrt(0.125) + 1e-6), 1e-5);
  EXPECT_EQ(compute("gigpo", b, {{"gamma", 0.5}, {"fnorm", "std"}}).advantages,
            compute("gigpo", b, {{"gamma", 0.5}}).advantages);
  o = compute("gigpo", b, {{"gamma", 0.5}, {"fnorm", "none"}, {"epsilon", 0.5}});
  EXPECT_NEAR(row_adv(o, b, 0), (0.5 + 0.25) / 1.5, 1e-6);
  o = compute("gigpo", b, {{"gamma", 0.5}, {"norm", "mean"}, {"epsilon", 0.5}});
  EXPECT_NEAR(row_adv(o, b, 0), 0.5 + 0.25, 1e-6);
  for (const auto& [args, key] :
       std::vector<std::pair<ArgMap, std::string>>{{{{"omega", 1.0}, {"step_advantage_weight", 1.0}}, "omega"},
                                                   {{{"fnorm", "std"}, {"norm", "std"}}, "fnorm"},
                                                   {{{"fnorm", "mean"}}, "fnorm"},
                                                   {{{"omega", "big"}}, "omega"}}) {
    try {
      advantage_registry().make("gigpo", args);
      ADD_FAILURE() << key;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

TEST(Advantage, GaeAndReinforcePlusPlus) {
  // Two rows of 3 tokens, reward on the last token, values 0.5: Â = ±0.5 on every token.
  Batch b({1, 0}, {"g", "g"}, 3);
  b.values.assign(6, 0.5f);
  auto o = compute("ppo", b);
  const double w = 0.5 / std::sqrt(0.3 + 1e-8);  // whitened: mean 0, unbiased var 6·0.25/5
  for (int64_t t = 0; t < 3; ++t) {
    EXPECT_NEAR(o.advantages[static_cast<size_t>(t)], w, 1e-5);
    EXPECT_NEAR(o.advantages[static_cast<size_t>(3 + t)], -w, 1e-5);
    EXPECT_NEAR(o.returns[static_cast<size_t>(t)], 1.0, 1e-6);
    EXPECT_NEAR(o.returns[static_cast<size_t>(3 + t)], 0.0, 1e-6);
  }
  // γ = 0.5, λ = 0.5, one row, values (0.2, 0.4, 0.1), reward 1: hand recursion.
  Batch c({1}, {"g"}, 3);
  c.values = {0.2f, 0.4f, 0.1f};
  o = compute("ppo", c, {{"gamma", 0.5}, {"lam", 0.5}});
  const double d2 = 1 - 0.1, d1 = 0.5 * 0.1 - 0.4, d0 = 0.5 * 0.4 - 0.2;
  const double a2 = d2, a1 = d1 + 0.25 * a2, a0 = d0 + 0.25 * a1;
  EXPECT_NEAR(o.returns[0], a0 + 0.2, 1e-6);
  EXPECT_NEAR(o.returns[1], a1 + 0.4, 1e-6);
  EXPECT_NEAR(o.returns[2], a2 + 0.1, 1e-6);
  const double mu = (a0 + a1 + a2) / 3;
  const double var = ((a0 - mu) * (a0 - mu) + (a1 - mu) * (a1 - mu) + (a2 - mu) * (a2 - mu)) / 2;
  EXPECT_NEAR(o.advantages[0], (a0 - mu) / std::sqrt(var + 1e-8), 1e-5);
  EXPECT_THROW(compute("ppo", Batch({1}, {"g"})), ValueError);  // no values
  // reinforce++ with γ = 0.5: G = (0.25, 0.5, 1) for reward 1, whitened over the batch.
  o = compute("reinforceplusplus", c, {{"gamma", 0.5}});
  EXPECT_NEAR(o.returns[0], 0.25, 1e-7);
  const double m2 = 1.75 / 3, v2 = ((0.25 - m2) * (0.25 - m2) + (0.5 - m2) * (0.5 - m2) + (1 - m2) * (1 - m2)) / 2;
  EXPECT_NEAR(o.advantages[2], (1 - m2) / std::sqrt(v2 + 1e-8), 1e-5);
}

TEST(Advantage, Distillation) {
  Batch b({0, 0}, {"g", "g"});
  b.old = {-2, -1, -0.5, -3};
  b.teacher = {-1, -1, -1, -2};
  b.mask = {1, 1, 1, 0};
  auto o = compute("on_policy_distill", b, {{"kl_coef", 2.0}});
  EXPECT_NEAR(o.advantages[0], 2.0, 1e-6);
  EXPECT_NEAR(o.advantages[2], -1.0, 1e-6);
  EXPECT_EQ(o.advantages[3], 0.0f);
  EXPECT_NEAR(o.metrics.get("kl/mean"), (-1.0 + 0.5) / 2, 1e-6);  // rows Σ(old − teacher): −1, 0.5
  for (double beta : {0.0, 0.3, 1.0}) {
    o = compute("jsd", b, {{"lambda_coef", beta}});
    const double s = -2, t = -1;
    double jsd;
    if (beta == 0) {
      jsd = s - t;
    } else if (beta == 1) {
      jsd = t - s;
    } else {
      const double logm = std::log((1 - beta) * std::exp(s) + beta * std::exp(t));
      jsd = beta * (t - logm) + (1 - beta) * (s - logm);
    }
    EXPECT_NEAR(o.advantages[0], -jsd, 1e-6) << beta;
  }
  EXPECT_THROW(compute("jsd", Batch({0}, {"g"})), ValueError);  // needs teacher logprobs
}

TEST(Advantage, EdgeCases) {
  Batch empty({}, {});
  try {
    compute("grpo", empty);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("empty batch"), std::string::npos) << e.what();
  }
  // An experience whose mask is all zero: zero advantages, no NaN, others unaffected.
  Batch b({1, 0, 0.5}, {"g", "g", "g"});
  b.mask[2] = b.mask[3] = 0;
  auto o = compute("grpo", b);
  EXPECT_EQ(o.advantages[2], 0.0f);
  EXPECT_EQ(o.advantages[3], 0.0f);
  EXPECT_NEAR(row_adv(o, b, 0), 0.5 / (0.5 + 1e-6), 1e-6);
  Batch bad({1, std::nanf("")}, {"g", "g"});
  EXPECT_THROW(compute("grpo", bad), ValueError);
  EXPECT_THROW(advantage_registry().make("grpo", {{"epsilonn", 1.0}}), ConfigError);
  EXPECT_THROW(advantage_registry().make("gae", {}), ConfigError);
}

}  // namespace
}  // namespace trinity::algo
