// Trainer-side (DataProto-style) advantages and the entropy clips: grpo_verl / opmd_verl / asymre_verl
// equal their grouped versions; remax, clipb and clipv by hand; argument and input errors name the
// offending key. (The PyTorch oracle, torch_oracle.py, checks them through `trinity debug loss`.)
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <tuple>

#include "algorithm/advantage.h"

namespace trinity::algo {
namespace {

struct Batch {
  int64_t B, T;
  std::vector<float> rewards, mask, old, ent, nec, token_rewards, baseline;
  std::vector<std::string> group;
  Batch(std::vector<float> r, std::vector<std::string> g, int64_t t = 2)
      : B(static_cast<int64_t>(r.size())), T(t), rewards(std::move(r)), group(std::move(g)) {
    mask.assign(static_cast<size_t>(B * T), 1.0f);
  }
  AdvInput in() const {
    AdvInput a;
    a.B = B, a.T = T;
    a.rewards = rewards, a.mask = mask, a.group = group, a.old_logprob = old, a.entropy = ent, a.nec = nec;
    a.token_rewards = token_rewards, a.reward_baseline = baseline;
    return a;
  }
};

AdvOutput compute(const std::string& name, const Batch& b, ArgMap args = {}) {
  Rng rng(0);
  return advantage_registry().make(name, args)->compute(b.in(), rng);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Random rewards in groups of 1..4 with some masked tokens.
Batch random_batch(uint64_t seed) {
  Rng rng(seed);
  std::vector<float> r;
  std::vector<std::string> g;
  const char* const kGroups[] = {"g0", "g1", "g2", "g3", "g4"};
  for (size_t gi = 0; gi < 5; ++gi) {
    const int n = 1 + static_cast<int>(rng.below(4));
    for (int k = 0; k < n; ++k) {
      r.push_back(rng.uniform() < 0.3 ? 1.0f : static_cast<float>(rng.uniform() * 2 - 0.5));
      g.push_back(kGroups[gi]);
    }
  }
  Batch b(r, g, 4);
  for (size_t i = 0; i < b.mask.size(); ++i) b.mask[i] = rng.uniform() < 0.2 ? 0.0f : 1.0f;
  return b;
}

TEST(VerlAdvantage, EqualToTheGroupedVersions) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const Batch b = random_batch(seed);
    const std::vector<std::tuple<std::string, std::string, ArgMap>> pairs = {
        {"grpo_verl", "grpo", {}},     {"grpo_verl", "grpo", {{"epsilon", 0.01}}},
        {"opmd_verl", "opmd", {}},     {"opmd_verl", "opmd", {{"opmd_baseline", "logavgexp"}, {"tau", 0.7}}},
        {"asymre_verl", "asymre", {}}, {"asymre_verl", "asymre", {{"baseline_shift", 0.25}}}};
    for (const auto& [verl, grouped, args] : pairs) {
      const auto x = compute(verl, b, args), y = compute(grouped, b, args);
      EXPECT_EQ(x.advantages, y.advantages) << verl << " seed " << seed;
      EXPECT_EQ(x.returns, y.returns) << verl;
      EXPECT_EQ(x.rows, y.rows) << verl;
      EXPECT_TRUE(x.mask.empty()) << verl;
      EXPECT_TRUE(advantage_registry().make(verl, args)->trainer_side()) << verl;
      EXPECT_FALSE(advantage_registry().make(grouped, args)->trainer_side()) << grouped;
    }
  }
}

TEST(VerlAdvantage, ScoresAreSummedTokenRewards) {
  // Token rewards (0.5, 0.5) and (0, 0): s = 1 and 0 regardless of the scalar reward.
  Batch b({7, 7}, {"g", "g"});
  b.token_rewards = {0.5f, 0.5f, 0.0f, 0.0f};
  const double a = 0.5 / (std::sqrt(0.5) + 1e-6);
  auto o = compute("grpo_verl", b);
  EXPECT_NEAR(o.advantages[0], a, 1e-6);
  EXPECT_NEAR(o.advantages[3], -a, 1e-6);
  o = compute("opmd_verl", b);
  EXPECT_NEAR(o.advantages[0], 0.5, 1e-7);
  o = compute("asymre_verl", b);  // s − (mean − 0.1)
  EXPECT_NEAR(o.advantages[2], -0.4, 1e-7);
  // A group of one: grpo_verl a = s/(1 + ε), opmd_verl / asymre_verl a = s.
  Batch one({3}, {"solo"});
  EXPECT_NEAR(compute("grpo_verl", one).advantages[0], 3 / (1 + 1e-6), 1e-6);
  EXPECT_NEAR(compute("asymre_verl", one).advantages[0], 3.0, 1e-7);
}

TEST(VerlAdvantage, RemaxHandValues) {
  // T = 3, reward 1 at the last token, token 1 masked: returns (1, ·, 1); A = returns − b·m.
  Batch b({1, 0}, {"g", "g"}, 3);
  b.mask = {1, 0, 1, 1, 1, 1};
  b.baseline = {0.25f, 0.5f};
  auto o = compute("remax", b);
  EXPECT_NEAR(o.advantages[0], 0.75, 1e-7);
  EXPECT_EQ(o.advantages[1], 0.0f);
  EXPECT_NEAR(o.advantages[2], 0.75, 1e-7);
  EXPECT_NEAR(o.returns[0], 1.0, 1e-7);
  for (int t = 3; t < 6; ++t) EXPECT_NEAR(o.advantages[static_cast<size_t>(t)], -0.5, 1e-7);
  // Dense token rewards: reversed cumsum of r·m.
  b.token_rewards = {0.5f, 9.0f, 0.25f, 1, 2, 3};
  o = compute("remax", b);
  EXPECT_NEAR(o.returns[0], 0.75, 1e-7);  // 0.5 + 0·9 + 0.25
  EXPECT_NEAR(o.advantages[0], 0.5, 1e-7);
  EXPECT_NEAR(o.advantages[3], 6 - 0.5, 1e-6);
  EXPECT_NEAR(o.advantages[4], 5 - 0.5, 1e-6);
  EXPECT_NEAR(o.metrics.get("reward_baseline/max"), 0.5, 1e-7);
  // No baseline: a clear error naming the missing key.
  b.baseline.clear();
  const std::string e = error_of([&] { compute("remax", b); });
  EXPECT_NE(e.find("reward_baseline"), std::string::npos) << e;
  EXPECT_NE(e.find("remax"), std::string::npos) << e;
}

// With old logprob 0 (p = 1), S = p·(H + logp) = H, so the entropy row is the clip signal.
TEST(EntropyAdvantage, ClipBHandValues) {
  Batch b({1, 0}, {"g", "g"}, 3);  // row 0: A > 0, row 1: A < 0
  b.old.assign(6, 0.0f);
  b.ent = {0, 5, 5, 5, 5, 0};
  // mean S = 20/6, population var = (2·(10/3)² + 4·(5/3)²)/6 = 50/9, std = 2.357; z of the zeros = −3.333.
  const double mu_s = 20.0 / 6, var_s = 50.0 / 9;
  auto o = compute("clipb", b, {{"mu", 1.2}});  // −1.2·std = −2.83: the A < 0 zero goes, the A > 0 zero stays
  EXPECT_EQ(o.mask, (std::vector<float>{1, 1, 1, 1, 1, 0}));
  EXPECT_NEAR(o.metrics.get("ES"), mu_s, 1e-9);
  EXPECT_NEAR(o.metrics.get("varS"), var_s, 1e-9);
  EXPECT_NEAR(o.metrics.get("frac_clipped"), 1.0 / 6, 1e-9);
  EXPECT_NEAR(o.metrics.get("frac_clipped_neg"), 1.0 / 3, 1e-9);
  EXPECT_EQ(o.metrics.get("frac_clipped_pos"), 0.0);
  const double a = 0.5 / (std::sqrt(0.5) + 1e-6);  // the grpo_verl advantages are unchanged
  EXPECT_NEAR(o.advantages[0], a, 1e-6);
  EXPECT_NEAR(o.advantages[5], -a, 1e-6);
  o = compute("clipb", b);  // μ = 2.5: −5.9, nothing dropped
  EXPECT_EQ(o.mask, b.mask);
  // A masked token is neither counted nor revived.
  b.mask[5] = 0;
  o = compute("clipb", b, {{"mu", 1.2}});
  EXPECT_EQ(o.mask[5], 0.0f);
  // Constant S (std 0): every token kept.
  b.ent.assign(6, 1.0f);
  EXPECT_EQ(compute("clipb", b, {{"mu", 0.0}}).mask, b.mask);
  // p = exp(logp) really enters: logp = log 0.5, H = 1 gives S = 0.5·(1 + log 0.5).
  Batch c({1, 0}, {"g", "g"}, 1);
  c.old = {static_cast<float>(std::log(0.5)), 0.0f};
  c.ent = {1.0f, 3.0f};
  o = compute("clipb", c, {{"mu", 0.0}});
  EXPECT_NEAR(o.metrics.get("ES"), (0.5 * (1 + std::log(0.5)) + 3.0) / 2, 1e-6);
}

TEST(EntropyAdvantage, ClipVHandValues) {
  // Groups: (1, 0) → A = ±a; (1, 1) → A = 0. S = H = 0, so x = N.
  Batch b({1, 0, 1, 1}, {"g", "g", "h", "h"}, 2);
  b.old.assign(8, 0.0f);
  b.ent.assign(8, 0.0f);
  b.nec = {10, 0, 10, 9, 10, 0, 0, 0};
  // mean 39/8, population std = sqrt(47.625 − (39/8)²) = 4.885; μ = 1: tokens with x > 4.885 and A ≤ 0 go:
  // row 1 (A < 0) both, row 2 token 0 (A = 0); row 0 token 0 (A > 0) stays. 3 of 8 = 0.375.
  auto o = compute("clipv", b, {{"mu", 1.0}, {"max_frac", 0.5}});
  EXPECT_EQ(o.mask, (std::vector<float>{1, 1, 0, 0, 0, 1, 1, 1}));
  EXPECT_NEAR(o.metrics.get("stdD"), std::sqrt(47.625 - (39.0 / 8) * (39.0 / 8)), 1e-9);
  EXPECT_NEAR(o.metrics.get("frac_clipped"), 3.0 / 8, 1e-9);
  EXPECT_NEAR(o.metrics.get("frac_clipped_neg"), 1.0, 1e-9);
  // max_frac 0.25 < 0.375 but the 2 negative candidates fit k = int(0.25·8) = 2: same mask.
  EXPECT_EQ(compute("clipv", b, {{"mu", 1.0}, {"max_frac", 0.25}}).mask, o.mask);
  // max_frac 0.125: k = 1, only the largest-x negative token (x = 10) goes; the A = 0 token still goes.
  o = compute("clipv", b, {{"mu", 1.0}, {"max_frac", 0.125}});
  EXPECT_EQ(o.mask, (std::vector<float>{1, 1, 0, 1, 0, 1, 1, 1}));
  // Defaults (μ = 8.5): nothing is that far out.
  EXPECT_EQ(compute("clipv", b).mask, b.mask);
  // S enters as x = N − S.
  b.ent = {0, 0, 0, 0, 10, 0, 0, 0};  // row 2 token 0: x = 10 − 10 = 0
  o = compute("clipv", b, {{"mu", 1.0}, {"max_frac", 0.5}});
  EXPECT_EQ(o.mask[4], 1.0f);
}

TEST(EntropyAdvantage, NeedsItsInputs) {
  Batch b({1, 0}, {"g", "g"});
  b.old.assign(4, 0.0f);
  std::string e = error_of([&] { compute("clipb", b); });
  EXPECT_NE(e.find("entropy"), std::string::npos) << e;
  b.ent.assign(4, 1.0f);
  e = error_of([&] { compute("clipv", b); });
  EXPECT_NE(e.find("nec"), std::string::npos) << e;
  b.old.clear();
  e = error_of([&] { compute("clipb", b); });
  EXPECT_NE(e.find("logprobs"), std::string::npos) << e;
  EXPECT_NE(std::string(kNecUnsupported).find("nec"), std::string::npos);
}

TEST(VerlAdvantage, ArgumentErrorsNameTheKey) {
  const auto& reg = advantage_registry();
  const std::vector<std::tuple<std::string, ArgMap, std::string>> bad = {
      {"grpo_verl", {{"std_threshold", 0.0}}, "std_threshold"},  // not an arg of the DataProto version
      {"grpo_verl", {{"epsilon", -1.0}}, "epsilon"},
      {"opmd_verl", {{"opmd_baseline", "max"}}, "opmd_baseline"},
      {"opmd_verl", {{"tau", 0.0}}, "tau"},
      {"asymre_verl", {{"baseline_shift", "low"}}, "baseline_shift"},
      {"remax", {{"gamma", 1.0}}, "gamma"},
      {"clipb", {{"mu", -1.0}}, "mu"},
      {"clipb", {{"max_frac", 0.1}}, "max_frac"},  // clipv only
      {"clipv", {{"max_frac", 2.0}}, "max_frac"},
      {"clipv", {{"muu", 1.0}}, "muu"},
  };
  for (const auto& [name, args, key] : bad) {
    const std::string e = error_of([&] { reg.make(name, args); });
    EXPECT_NE(e.find(key), std::string::npos) << name << ": " << e;
    EXPECT_NE(e.find(name), std::string::npos) << name << ": " << e;
  }
  // Upstream's argument names and defaults are accepted.
  for (const auto& [name, args] :
       std::vector<std::pair<std::string, ArgMap>>{{"grpo_verl", {{"epsilon", 1e-6}}},
                                                   {"opmd_verl", {{"opmd_baseline", "logavgexp"}, {"tau", 1.0}}},
                                                   {"asymre_verl", {{"baseline_shift", -0.1}}},
                                                   {"remax", {}},
                                                   {"clipb", {{"epsilon", 1e-6}, {"mu", 2.5}}},
                                                   {"clipv", {{"epsilon", 1e-6}, {"mu", 8.5}, {"max_frac", 1e-4}}}})
    EXPECT_NO_THROW(reg.make(name, args)) << name;
  EXPECT_EQ(reg.entry("clipv").args[1].def, ArgValue(8.5));  // default_args' μ, not __init__'s 2.0
}

}  // namespace
}  // namespace trinity::algo
