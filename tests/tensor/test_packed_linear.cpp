// Panel-packed inference linear (fp32 and bf16 panels) against the naive double reference, for row
// counts covering every register tile (1..12 and multiples), output counts that are and are not
// multiples of the 32-wide panel, bias, and accumulate mode. bf16 is checked against the reference
// run on bf16-rounded weights (the kernel's math is fp32 on exactly widened weights).
#include <gtest/gtest.h>

#include "tensor/kernels.h"
#include "tensor/packed_linear.h"
#include "tensor/tensor.h"
#include "fd.h"

using namespace trinity;
using namespace trinity::tensor;
using test::expect_close;
using test::randn;

namespace {

void check(int64_t n, int64_t ic, int64_t oc, PackDType dt, bool bias, bool acc) {
  auto x = randn(static_cast<size_t>(n * ic), 10 + static_cast<uint64_t>(n));
  auto w = randn(static_cast<size_t>(oc * ic), 20 + static_cast<uint64_t>(oc), 0.1f);
  auto b = randn(static_cast<size_t>(oc), 30);
  auto wr = w;
  if (dt == PackDType::kBF16)
    for (auto& v : wr) v = bf16_to_f32(f32_to_bf16(v));
  std::vector<float> y = randn(static_cast<size_t>(n * oc), 40), ref(y.size());
  const std::vector<float> y0 = y;
  linear_forward_ref(ref.data(), x.data(), wr.data(), bias ? b.data() : nullptr, n, ic, oc);
  if (acc)
    for (size_t i = 0; i < ref.size(); ++i) ref[i] += y0[i];
  PackedLinear pw(w.data(), oc, ic, dt);
  EXPECT_EQ(pw.panels(), (oc + 31) / 32);
  packed_linear(y.data(), x.data(), pw, bias ? b.data() : nullptr, n, acc);
  expect_close(y, ref, 1e-4, "packed_linear");
}

}  // namespace

TEST(PackedLinear, Fp32MatchesReferenceForEveryTile) {
  for (int64_t n : {1, 2, 3, 5, 7, 11, 12, 13, 24, 25, 40})
    check(n, 67, 96, PackDType::kF32, n % 2 == 0, false);
}

TEST(PackedLinear, RaggedOutputsBiasAndAccumulate) {
  for (int64_t oc : {1, 31, 33, 70})
    for (int acc = 0; acc < 2; ++acc) {
      check(3, 19, oc, PackDType::kF32, true, acc);
      check(14, 64, oc, PackDType::kBF16, !acc, acc);
    }
}

TEST(PackedLinear, Bf16MatchesReferenceOnRoundedWeights) {
  for (int64_t n : {1, 2, 4, 9, 12, 17, 64})
    check(n, 130, 160, PackDType::kBF16, true, false);
}

TEST(PackedLinear, Bf16StoresHalfTheBytes) {
  auto w = randn(64 * 48, 1);
  PackedLinear f(w.data(), 64, 48, PackDType::kF32), h(w.data(), 64, 48, PackDType::kBF16);
  EXPECT_EQ(f.bytes(), 64u * 48u * 4u);
  EXPECT_EQ(h.bytes(), 64u * 48u * 2u);
}
