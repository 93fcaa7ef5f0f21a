// Vectorised exp against std::exp: <= 3 ulp relative error across the float range that matters,
// exact zero below -87.3, and exp_shifted's double sum.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tensor/vmath.h"

using namespace trinity::tensor;

TEST(Vmath, ExpWithinThreeUlp) {
  double worst = 0;
  for (float x = -87.0f; x < 88.3f; x += 0.0013f) {
    float in[16];
    for (int i = 0; i < 16; ++i) in[i] = x + static_cast<float>(i) * 7e-5f;
    const v16f r = v16_exp(v16_load(in));
    for (int i = 0; i < 16; ++i) {
      const double e = std::exp(static_cast<double>(in[i]));
      worst = std::max(worst, std::abs(r[i] - e) / e);
    }
  }
  EXPECT_LT(worst, 3 * 5.96e-8);
  float low[16];
  for (int i = 0; i < 16; ++i) low[i] = -88.0f - static_cast<float>(i) * 10.0f;
  const v16f z = v16_exp(v16_load(low));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(z[i], 0.0f);
}

TEST(Vmath, ExpShiftedSum) {
  std::vector<float> x(1000), out(1000);
  double want = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(static_cast<float>(i)) * 5.0f;
    want += std::exp(static_cast<double>(x[i]) - 5.0);
  }
  EXPECT_NEAR(exp_shifted(out.data(), x.data(), 5.0f, 1000), want, want * 1e-6);
  EXPECT_NEAR(out[999], std::exp(x[999] - 5.0f), 1e-6);
}
