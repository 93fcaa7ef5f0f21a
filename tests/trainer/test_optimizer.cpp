// AdamW against a hand-computed torch.optim.AdamW step, clipping semantics, and the LR schedules.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "trainer/optimizer.h"

using namespace trinity;
using namespace trinity::trainer;

TEST(AdamW, TwoStepsMatchHandComputedTorchFormula) {
  AdamWConfig c{0.1, 0.9, 0.99, 1e-8, 0.5};
  AdamW opt(2, c);
  std::vector<float> p = {1.0f, -2.0f}, g = {0.5f, 0.0f};
  // Reference in double, torch's formula.
  double rp[2] = {1.0, -2.0}, m[2] = {0, 0}, v[2] = {0, 0};
  const double gs[2][2] = {{0.5, 0.0}, {-0.25, 1.0}};
  for (int t = 1; t <= 2; ++t) {
    g = {static_cast<float>(gs[t - 1][0]), static_cast<float>(gs[t - 1][1])};
    opt.step(p.data(), g.data(), c.lr);
    for (int i = 0; i < 2; ++i) {
      rp[i] *= 1 - c.lr * c.weight_decay;
      m[i] = c.beta1 * m[i] + (1 - c.beta1) * gs[t - 1][i];
      v[i] = c.beta2 * v[i] + (1 - c.beta2) * gs[t - 1][i] * gs[t - 1][i];
      const double mh = m[i] / (1 - std::pow(c.beta1, t));
      const double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(c.beta2, t)) + c.eps;
      rp[i] -= c.lr * mh / denom;
      EXPECT_NEAR(p[static_cast<size_t>(i)], rp[i], 1e-6) << "step " << t << " param " << i;
    }
  }
  EXPECT_EQ(opt.steps(), 2);
}

TEST(ClipGradNorm, ScalesOnlyAboveMaxNorm) {
  std::vector<float> g = {3.0f, 4.0f};
  EXPECT_NEAR(clip_grad_norm(g.data(), 2, 10.0), 5.0, 1e-9);
  EXPECT_EQ(g[0], 3.0f);
  EXPECT_NEAR(clip_grad_norm(g.data(), 2, 1.0), 5.0, 1e-9);
  EXPECT_NEAR(std::sqrt(g[0] * g[0] + g[1] * g[1]), 1.0 * 5.0 / (5.0 + 1e-6), 1e-6);
  std::vector<float> bad = {NAN, 1.0f};
  EXPECT_TRUE(std::isnan(clip_grad_norm(bad.data(), 2, 1.0)));
  EXPECT_EQ(bad[1], 1.0f) << "a non-finite norm leaves gradients untouched";
}

TEST(LrSchedule, ConstantWithWarmup) {
  LrSchedule s{"constant", 4, 100, 0.0};
  EXPECT_DOUBLE_EQ(s.factor(0), 0.0);
  EXPECT_DOUBLE_EQ(s.factor(2), 0.5);
  EXPECT_DOUBLE_EQ(s.factor(4), 1.0);
  EXPECT_DOUBLE_EQ(s.factor(99), 1.0);
  LrSchedule none{"constant", 0, 10, 0.0};
  EXPECT_DOUBLE_EQ(none.factor(0), 1.0);
}

TEST(LrSchedule, CosineDecaysToMinRatio) {
  LrSchedule s{"cosine", 2, 12, 0.1};
  EXPECT_DOUBLE_EQ(s.factor(1), 0.5);
  EXPECT_NEAR(s.factor(2), 1.0, 1e-12);
  EXPECT_NEAR(s.factor(7), 0.55, 1e-12);  // halfway: (1 + 0.1) / 2
  EXPECT_NEAR(s.factor(12), 0.1, 1e-12);
  EXPECT_NEAR(s.factor(20), 0.1, 1e-12) << "clamped at min_lr_ratio past the end";
}

TEST(LrSchedule, UnknownTypeNamesTheKey) {
  LrSchedule s{"linear", 0, 10, 0.0};
  try {
    s.validate();
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("lr_scheduler_type"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("linear"), std::string::npos);
  }
}
