// Sampler: reported logprob is log_softmax(z / T) of the unmodified logits; greedy; top_k / top_p /
// min_p restrict the draw; repetition penalty and bans; parameter validation names the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "core/error.h"
#include "engine/sampling.h"

using namespace trinity;
using namespace trinity::engine;

namespace {
double log_softmax_at(const std::vector<float>& z, double t, int k) {
  double mx = -1e300;
  for (float x : z) mx = std::max(mx, x / t);
  double s = 0;
  for (float x : z) s += std::exp(x / t - mx);
  return z[static_cast<size_t>(k)] / t - mx - std::log(s);
}
}  // namespace

TEST(Sampling, ReportedLogprobIsTemperedFullSoftmax) {
  const std::vector<float> z = {1.0f, 2.5f, -1.0f, 0.3f, 2.4f};
  for (double t : {0.5, 1.0, 1.7}) {
    SamplingParams p;
    p.temperature = t;
    p.top_k = 2;
    p.repetition_penalty = 1.3;
    Rng rng(1);
    std::vector<float> s;
    for (int i = 0; i < 50; ++i) {
      auto zz = z;
      TokenChoice c = sample_token(zz.data(), 5, p, {1, 4}, {}, rng, s);
      EXPECT_TRUE(c.token == 1 || c.token == 4) << "top_k 2";
      EXPECT_NEAR(c.logprob, log_softmax_at(z, t, c.token), 1e-6) << "unpenalised, unfiltered, tempered";
    }
  }
}

TEST(Sampling, GreedyAndBans) {
  std::vector<float> z = {0.0f, 3.0f, 1.0f};
  SamplingParams p;
  p.temperature = 0.0;
  Rng rng(2);
  std::vector<float> s;
  auto c = sample_token(z.data(), 3, p, {}, {}, rng, s);
  EXPECT_EQ(c.token, 1);
  EXPECT_NEAR(c.logprob, log_softmax_at({0.0f, 3.0f, 1.0f}, 1.0, 1), 1e-6);
  c = sample_token(z.data(), 3, p, {}, {1}, rng, s);
  EXPECT_EQ(c.token, 2) << "banned id never drawn";
}

// Temperatures below kGreedyTemperature are greedy (1/T once overflowed the tempered exps and drew
// token -1); non-finite logits are refused with a clear error instead of drawing garbage.
TEST(Sampling, TinyTemperatureIsGreedyAndNonFiniteLogitsThrow) {
  std::vector<float> z(40);
  for (size_t i = 0; i < z.size(); ++i) z[i] = 3.0f * std::sin(static_cast<float>(i) * 1.7f) + 20.0f;
  const int32_t best = static_cast<int32_t>(std::max_element(z.begin(), z.end()) - z.begin());
  std::vector<float> s;
  for (double t : {1e-6, 1e-10, 1e-20, 1e-40, 5e-324}) {
    for (double rp : {1.0, 1.2}) {
      SamplingParams p;
      p.temperature = t;
      p.repetition_penalty = rp;
      Rng rng(5);
      auto c = sample_token(z.data(), 40, p, {}, {}, rng, s);
      EXPECT_EQ(c.token, best) << "temperature " << t;
      EXPECT_NEAR(c.logprob, log_softmax_at(z, 1.0, best), 1e-5) << "reported like temperature 0";
    }
  }
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
    auto zz = z;
    zz[7] = bad;
    for (double t : {0.0, 1.0}) {
      SamplingParams p;
      p.temperature = t;
      Rng rng(5);
      EXPECT_THROW(sample_token(zz.data(), 40, p, {}, {}, rng, s), ValueError);
    }
  }
  std::vector<float> none(40, -std::numeric_limits<float>::infinity());
  SamplingParams p;
  Rng rng(5);
  EXPECT_THROW(sample_token(none.data(), 40, p, {}, {}, rng, s), ValueError) << "every token masked";
}

TEST(Sampling, TopPAndMinPKeepOnlyTheHead) {
  std::vector<float> z = {5.0f, 4.9f, 0.0f, -1.0f, 0.5f};
  SamplingParams p;
  p.top_p = 0.5;
  Rng rng(3);
  std::vector<float> s;
  for (int i = 0; i < 100; ++i) {
    auto zz = z;
    EXPECT_EQ(sample_token(zz.data(), 5, p, {}, {}, rng, s).token, 0) << "top_p 0.5 keeps only the top token";
  }
  p.top_p = 1.0;
  p.min_p = 0.5;
  std::map<int, int> seen;
  for (int i = 0; i < 400; ++i) {
    auto zz = z;
    ++seen[sample_token(zz.data(), 5, p, {}, {}, rng, s).token];
  }
  EXPECT_EQ(seen.size(), 2u) << "min_p 0.5 keeps tokens with p >= 0.5 * p_max";
  EXPECT_GT(seen[0], 100);
  EXPECT_GT(seen[1], 100);
}

TEST(Sampling, FrequenciesFollowTheDistribution) {
  std::vector<float> z = {0.0f, std::log(3.0f)};  // p = 0.25, 0.75
  SamplingParams p;
  Rng rng(4);
  std::vector<float> s;
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    auto zz = z;
    ones += sample_token(zz.data(), 2, p, {}, {}, rng, s).token;
  }
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.75, 0.015);
}

TEST(Sampling, ValidationNamesTheField) {
  SamplingParams p;
  p.temperature = -0.1;
  try {
    p.validate();
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("temperature"), std::string::npos);
  }
  p = SamplingParams{};
  p.max_tokens = -5;
  EXPECT_THROW(p.validate(), ValueError);
  p = SamplingParams{};
  p.top_p = 0.0;
  EXPECT_THROW(p.validate(), ValueError);
}
