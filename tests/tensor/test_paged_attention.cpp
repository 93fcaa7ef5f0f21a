// Paged decode attention against the double-precision reference: head sizes with the AVX-512 path
// (32, 64, 128) and without (48), GQA groups 1/4/7, lengths that end inside a page and inside a
// 16-key block, page sizes 16 and 5 (blocks split at page ends), pages scattered in a pool and rows
// wider than one head (ld > hs).
#include <gtest/gtest.h>

#include <vector>

#include "tensor/paged_attention.h"
#include "fd.h"

using namespace trinity;
using namespace trinity::tensor;
using test::randn;

namespace {

void check(int64_t hs, int64_t group, int64_t n, int64_t ps) {
  const int64_t heads = 3, ld = heads * hs, head = 1;  // rows hold 3 kv heads; use the middle one
  const int64_t pages = (n + ps - 1) / ps, pool = pages + 3;
  auto kpool = randn(static_cast<size_t>(pool * ps * ld), 7 + static_cast<uint64_t>(n));
  auto vpool = randn(static_cast<size_t>(pool * ps * ld), 8 + static_cast<uint64_t>(n));
  std::vector<const float*> kp, vp;
  for (int64_t p = 0; p < pages; ++p) {
    const int64_t slot = pool - 1 - p;  // reversed order in the pool, not contiguous from 0
    kp.push_back(kpool.data() + slot * ps * ld + head * hs);
    vp.push_back(vpool.data() + slot * ps * ld + head * hs);
  }
  auto q = randn(static_cast<size_t>(group * hs), 9, 0.5f);
  std::vector<float> out(static_cast<size_t>(group * hs), -1.0f), ref(out.size(), -1.0f),
      s(static_cast<size_t>(group * n));
  const float scale = 0.125f;
  paged_attention(out.data(), hs, q.data(), hs, group, hs, n, scale, kp.data(), vp.data(), ps, ld, s.data());
  paged_attention_ref(ref.data(), hs, q.data(), hs, group, hs, n, scale, kp.data(), vp.data(), ps, ld);
  for (size_t i = 0; i < static_cast<size_t>(group * hs); ++i)
    ASSERT_NEAR(out[i], ref[i], 2e-5) << "hs " << hs << " group " << group << " n " << n << " ps " << ps << " i " << i;
}

}  // namespace

TEST(PagedAttention, MatchesReference) {
  for (int64_t hs : {32, 48, 64, 128})
    for (int64_t group : {1, 4, 7})
      for (int64_t n : {1, 5, 16, 17, 40, 100})
        for (int64_t ps : {16, 5}) check(hs, group, n, ps);
}

TEST(PagedAttention, SingleKeyCopiesItsValue) {
  const int64_t hs = 64;
  auto k = randn(hs, 1), v = randn(hs, 2), q = randn(2 * hs, 3);
  const float* kp[] = {k.data()};
  const float* vp[] = {v.data()};
  std::vector<float> out(2 * hs), s(2);
  paged_attention(out.data(), hs, q.data(), hs, 2, hs, 1, 1.0f, kp, vp, 16, hs, s.data());
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t d = 0; d < hs; ++d) EXPECT_FLOAT_EQ(out[static_cast<size_t>(g * hs + d)], v[static_cast<size_t>(d)]);
}
