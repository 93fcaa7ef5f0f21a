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

TEST(PackedLinear, SixteenRowsLongPanels) {
  // Batch-16 decode (two 8-row tiles per panel) with IC longer than the kernel's L2 prefetch
  // distance (256 k steps), so prefetches land inside, and past the end of, each panel (IC equal
  // to it, one past it, and beyond).
  for (auto dt : {PackDType::kF32, PackDType::kBF16}) {
    check(16, 600, 70, dt, true, false);
    check(16, 257, 64, dt, false, true);
    check(16, 256, 40, dt, true, true);
  }
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

TEST(PackedLinear, FusedPartsMatchSeparateReferences) {
  // Parts with ragged output counts (each starts on a panel boundary), bias on some, every tile.
  const int64_t ic = 45;
  const std::vector<int64_t> ocs = {40, 32, 7};
  for (auto dt : {PackDType::kF32, PackDType::kBF16})
    for (int64_t n : {1, 4, 12, 16, 29}) {
      std::vector<std::vector<float>> ws, bs, ys;
      std::vector<PackedLinear::Part> parts;
      for (size_t i = 0; i < ocs.size(); ++i) {
        ws.push_back(randn(static_cast<size_t>(ocs[i] * ic), 50 + i, 0.1f));
        bs.push_back(randn(static_cast<size_t>(ocs[i]), 60 + i));
        ys.push_back(std::vector<float>(static_cast<size_t>(n * ocs[i]), 123.0f));
        parts.push_back({ws.back().data(), ocs[i]});
      }
      PackedLinear pw(parts, ic, dt);
      EXPECT_EQ(pw.parts(), 3);
      EXPECT_EQ(pw.panels(), 2 + 1 + 1);
      EXPECT_EQ(pw.oc(), 79);
      auto x = randn(static_cast<size_t>(n * ic), 70 + static_cast<uint64_t>(n));
      std::vector<PackedOut> outs;
      for (size_t i = 0; i < ocs.size(); ++i) outs.push_back({ys[i].data(), i == 1 ? nullptr : bs[i].data()});
      packed_linear_parts(outs.data(), x.data(), pw, n);
      for (size_t i = 0; i < ocs.size(); ++i) {
        auto wr = ws[i];
        if (dt == PackDType::kBF16)
          for (auto& v : wr) v = bf16_to_f32(f32_to_bf16(v));
        std::vector<float> ref(ys[i].size());
        linear_forward_ref(ref.data(), x.data(), wr.data(), i == 1 ? nullptr : bs[i].data(), n, ic, ocs[i]);
        expect_close(ys[i], ref, 1e-4, "packed_linear_parts");
      }
    }
}

// Batch invariance: a row's outputs are the same bits whatever other rows share the call (every
// tile shape sums k in the same order). The engine relies on it: a sequence's logits must not
// depend on which other requests were batched with it (same seed + config => same checkpoint).
TEST(PackedLinear, RowsAreBitwiseIndependentOfTheBatch) {
  const int64_t ic = 300, oc = 200;  // 7 panels: groups of 4 and 2 with ragged remainders
  auto w = randn(static_cast<size_t>(oc * ic), 80, 0.1f);
  auto b = randn(static_cast<size_t>(oc), 81);
  const int64_t n = 29;
  auto x = randn(static_cast<size_t>(n * ic), 82);
  for (auto dt : {PackDType::kF32, PackDType::kBF16}) {
    PackedLinear pw(w.data(), oc, ic, dt);
    std::vector<float> full(static_cast<size_t>(n * oc));
    packed_linear(full.data(), x.data(), pw, b.data(), n, false);
    // Every sub-batch [r0, r0 + m) (m = 1, 2, 3, 5, 13) gives the full call's rows bit for bit.
    for (int64_t m : {1, 2, 3, 5, 13})
      for (int64_t r0 = 0; r0 + m <= n; r0 += m) {
        std::vector<float> part(static_cast<size_t>(m * oc));
        packed_linear(part.data(), x.data() + r0 * ic, pw, b.data(), m, false);
        for (int64_t i = 0; i < m * oc; ++i)
          ASSERT_EQ(part[static_cast<size_t>(i)], full[static_cast<size_t>(r0 * oc + i)])
              << "rows " << r0 << "+" << m << ", output " << i << (dt == PackDType::kBF16 ? " (bf16)" : " (f32)");
      }
  }
  // Fused parts: the same.
  const std::vector<int64_t> ocs = {200, 40};
  auto w2 = randn(static_cast<size_t>(40 * ic), 83, 0.1f);
  PackedLinear fused({{w.data(), ocs[0]}, {w2.data(), ocs[1]}}, ic, PackDType::kF32);
  std::vector<float> fa(static_cast<size_t>(n * ocs[0])), fb(static_cast<size_t>(n * ocs[1]));
  const PackedOut outs[] = {{fa.data(), b.data()}, {fb.data(), nullptr}};
  packed_linear_parts(outs, x.data(), fused, n);
  for (int64_t m : {1, 2, 7})
    for (int64_t r0 = 0; r0 + m <= n; r0 += m) {
      std::vector<float> pa(static_cast<size_t>(m * ocs[0])), pb(static_cast<size_t>(m * ocs[1]));
      const PackedOut po[] = {{pa.data(), b.data()}, {pb.data(), nullptr}};
      packed_linear_parts(po, x.data() + r0 * ic, fused, m);
      for (int64_t i = 0; i < m * ocs[0]; ++i)
        ASSERT_EQ(pa[static_cast<size_t>(i)], fa[static_cast<size_t>(r0 * ocs[0] + i)]);
      for (int64_t i = 0; i < m * ocs[1]; ++i)
        ASSERT_EQ(pb[static_cast<size_t>(i)], fb[static_cast<size_t>(r0 * ocs[1] + i)]);
    }
}
