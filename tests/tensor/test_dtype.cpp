// bf16 / f16 conversions: round-to-nearest-even, NaN/Inf, subnormals; Tensor conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tensor/tensor.h"

using namespace trinity::tensor;

namespace {
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);  // tie -> even (down)
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);  // above tie
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(-std::numeric_limits<float>::infinity())),
            -std::numeric_limits<float>::infinity());
  for (float x : {0.0f, -2.5f, 3.140625f, 0x1p-100f}) EXPECT_EQ(bf16_to_f32(f32_to_bf16(x)), x);
}

TEST(DType, F16RoundTripAndEdgeCases) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);  // overflow -> inf
  EXPECT_EQ(f32_to_f16(from_bits(0x3f801000u)), 0x3c00);  // tie -> even
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite positive half round-trips
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(f32_to_f16(f), h) << h;
  }
}

TEST(DType, TensorConversions) {
  Tensor t(DType::kF32, {2, 3});
  for (int i = 0; i < 6; ++i) t.f32()[i] = static_cast<float>(i) * 0.5f - 1.0f;
  Tensor b = t.to(DType::kBF16);
  EXPECT_EQ(b.nbytes(), 12u);
  Tensor back = b.to_f32();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back.f32()[i], t.f32()[i]);
  EXPECT_EQ(t.shape_str(), "[2, 3]");
}
