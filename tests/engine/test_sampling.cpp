// Sampler: reported logprob is log_softmax(z / T) of the unmodified logits; greedy; top_k / top_p /
// min_p restrict the draw; repetition penalty and bans; parameter validation names the field.
#include <gtest/gtest.h>

#include <cmath>
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
