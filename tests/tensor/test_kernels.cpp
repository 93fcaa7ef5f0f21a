// Elementwise / normalisation / linear kernels: fast vs naive double reference, and every backward
// against finite differences of the forward.
#include <gtest/gtest.h>

#include "core/parallel.h"
#include "fd.h"
#include "tensor/blas.h"
#include "tensor/kernels.h"

using namespace trinity;
using namespace trinity::tensor;
using test::dot;
using test::expect_close;
using test::expect_fd;
using test::randn;

TEST(Kernels, GemmMatchesReferenceAllTransposes) {
  const int m = 37, n = 29, k = 53;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      auto a = randn(static_cast<size_t>(m * k), 1), b = randn(static_cast<size_t>(k * n), 2);
      auto c1 = randn(static_cast<size_t>(m * n), 3), c2 = c1;
      const int lda = ta ? m : k, ldb = tb ? k : n;
      gemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c1.data(), n);
      gemm_ref(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c2.data(), n);
      expect_close(c1, c2, 1e-4, "gemm");
    }
}

TEST(Kernels, EmbeddingForwardBackward) {
  const int64_t v = 11, c = 7, n = 9;
  auto wte = randn(static_cast<size_t>(v * c), 4);
  std::vector<int32_t> ids = {3, 0, 10, 3, 3, 7, 1, 0, 9};
  std::vector<float> out(static_cast<size_t>(n * c)), ref(out.size());
  embedding_forward(out.data(), ids.data(), wte.data(), n, c);
  embedding_forward_ref(ref.data(), ids.data(), wte.data(), n, c);
  EXPECT_EQ(out, ref);
  auto dout = randn(out.size(), 5);
  std::vector<float> dwte(wte.size(), 0.0f);
  embedding_backward(dwte.data(), dout.data(), ids.data(), n, c);
  std::vector<float> dref(wte.size(), 0.5f), dfast(wte.size(), 0.5f);  // both accumulate (+=)
  embedding_backward_ref(dref.data(), dout.data(), ids.data(), n, c);
  embedding_backward(dfast.data(), dout.data(), ids.data(), n, c);
  expect_close(dfast, dref, 1e-6, "dwte vs reference (repeated ids)");
  expect_fd(wte, dwte, [&] {
    embedding_forward(out.data(), ids.data(), wte.data(), n, c);
    return dot(out, dout);
  }, "dwte");
}

// Large products run as dynamically scheduled tiles along C's longer side (rows when m >= n):
// ragged last tiles, every transpose and row strides wider than the matrix; results equal the
// reference and are bitwise the same whichever thread count or schedule ran them.
TEST(Kernels, GemmTilesMatchReferenceAndDoNotDependOnThreads) {
  const int saved = num_threads();
  const int shapes[][3] = {{301, 70, 200}, {70, 333, 150}};
  for (const auto& s : shapes)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        const int m = s[0], n = s[1], k = s[2];
        const int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 7;
        auto a = randn(static_cast<size_t>((ta ? k : m) * lda), 1);
        auto b = randn(static_cast<size_t>((tb ? n : k) * ldb), 2);
        const auto c0 = randn(static_cast<size_t>(m * ldc), 3);
        auto ref = c0;
        gemm_ref(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, ref.data(), ldc);
        std::vector<float> first;
        for (int nt : {3, 2, 1, 3}) {
          set_num_threads(nt);
          auto c = c0;
          gemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), ldc);
          expect_close(c, ref, 1e-4, "tiled gemm");
          if (first.empty()) {
            first = c;
          } else if (nt == 3) {
            EXPECT_EQ(c, first) << "3 threads twice gave different bits";
          }
        }
      }
  set_num_threads(saved);
}

// The core budget per role (core/parallel.h) runs a product on fewer threads while the other role is
// busy; the tiles stay those of the process-wide count, and a product too small to tile is one
// OpenBLAS call threaded by that count too, so the bits do not follow the budget. Shapes: tiled
// (301 x 70), untiled with both sides under 128 (100 x 100, k 999), a few rows (3 x 100, k 999).
TEST(Kernels, GemmBitsDoNotFollowTheRoleBudget) {
  const int saved = num_threads();
  set_num_threads(3);
  set_role_threads(1, 2);
  set_thread_role(Role::kExplorer);
  const int shapes[][3] = {{301, 70, 200}, {100, 100, 999}, {3, 100, 999}};
  for (const auto& sh : shapes) {
    const int m = sh[0], n = sh[1], k = sh[2];
    const auto a = randn(static_cast<size_t>(m * k), 4), b = randn(static_cast<size_t>(k * n), 5);
    std::vector<float> alone(static_cast<size_t>(m * n)), shared(alone.size());
    ASSERT_EQ(num_threads(), 3);  // as any kernel asks before a product
    gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, alone.data(), n);
    {
      const RoleBusy trainer(Role::kTrainer);
      ASSERT_EQ(num_threads(), 1);
      gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, shared.data(), n);
    }
    EXPECT_EQ(shared, alone) << m << " x " << n << ", k " << k;
  }
  set_role_threads(0, 0);
  set_thread_role(Role::kNone);
  set_num_threads(saved);
}

// dweight sums fixed blocks of rows in block order: the same bits for any thread count.
TEST(Kernels, RmsnormBackwardDweightDoesNotDependOnThreads) {
  const int saved = num_threads();
  const int64_t n = 203, c = 64;
  auto x = randn(static_cast<size_t>(n * c), 21), w = randn(static_cast<size_t>(c), 22);
  std::vector<float> y(x.size()), r(n);
  rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), n, c, 1e-6f);
  auto dy = randn(y.size(), 23);
  std::vector<float> first;
  for (int nt : {1, 2, 3}) {
    set_num_threads(nt);
    std::vector<float> dx(x.size(), 0.0f), dw(static_cast<size_t>(c), 0.0f);
    rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), r.data(), n, c);
    if (first.empty()) {
      first = dw;
    } else {
      EXPECT_EQ(dw, first) << nt << " threads";
    }
  }
  set_num_threads(saved);
}

TEST(Kernels, RmsnormMatchesReferenceAndGradients) {
  const int64_t n = 13, c = 48;
  auto x = randn(static_cast<size_t>(n * c), 6), w = randn(static_cast<size_t>(c), 7);
  std::vector<float> y(x.size()), yr(x.size()), r(n), rr(n);
  rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), n, c, 1e-6f);
  rmsnorm_forward_ref(yr.data(), rr.data(), x.data(), w.data(), n, c, 1e-6f);
  expect_close(y, yr, 1e-5, "rmsnorm");
  auto dy = randn(y.size(), 8);
  std::vector<float> dx(x.size(), 0.0f), dw(w.size(), 0.0f), dxr(x.size(), 0.0f), dwr(w.size(), 0.0f);
  rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), r.data(), n, c);
  rmsnorm_backward_ref(dxr.data(), dwr.data(), dy.data(), x.data(), w.data(), r.data(), n, c);
  expect_close(dx, dxr, 1e-4, "rmsnorm dx vs ref");
  expect_close(dw, dwr, 1e-4, "rmsnorm dw vs ref");
  auto loss = [&] {
    rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), n, c, 1e-6f);
    return dot(y, dy);
  };
  expect_fd(x, dx, loss, "rmsnorm dx");
  expect_fd(w, dw, loss, "rmsnorm dw");
}

TEST(Kernels, RmsnormBackwardAccumulates) {
  const int64_t n = 3, c = 8;
  auto x = randn(static_cast<size_t>(n * c), 9), w = randn(static_cast<size_t>(c), 10);
  std::vector<float> y(x.size()), r(n);
  rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), n, c, 1e-6f);
  auto dy = randn(y.size(), 11);
  std::vector<float> dx1(x.size(), 0.0f), dw1(c, 0.0f), dx2(x.size(), 1.0f), dw2(c, 2.0f);
  rmsnorm_backward(dx1.data(), dw1.data(), dy.data(), x.data(), w.data(), r.data(), n, c);
  rmsnorm_backward(dx2.data(), dw2.data(), dy.data(), x.data(), w.data(), r.data(), n, c);
  for (size_t i = 0; i < dx1.size(); ++i) EXPECT_FLOAT_EQ(dx2[i], dx1[i] + 1.0f);
  for (size_t i = 0; i < dw1.size(); ++i) EXPECT_FLOAT_EQ(dw2[i], dw1[i] + 2.0f);
}

TEST(Kernels, RopeForwardBackward) {
  const int64_t n = 5, h = 3, hs = 8, half = hs / 2, p = 16;
  std::vector<float> cs(static_cast<size_t>(p * half)), sn(cs.size());
  for (int64_t i = 0; i < p; ++i)
    for (int64_t j = 0; j < half; ++j) {
      const double ang = static_cast<double>(i) * std::pow(10000.0, -2.0 * static_cast<double>(j) / hs);
      cs[static_cast<size_t>(i * half + j)] = static_cast<float>(std::cos(ang));
      sn[static_cast<size_t>(i * half + j)] = static_cast<float>(std::sin(ang));
    }
  std::vector<int32_t> pos = {0, 1, 7, 15, 3};
  auto x = randn(static_cast<size_t>(n * h * hs), 12);
  auto y = x, yr = x;
  rope_forward(y.data(), pos.data(), cs.data(), sn.data(), n, h, hs);
  rope_forward_ref(yr.data(), pos.data(), cs.data(), sn.data(), n, h, hs);
  expect_close(y, yr, 1e-6, "rope");
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + hs), std::vector<float>(x.begin(), x.begin() + hs))
      << "position 0 is the identity";
  auto dy = randn(y.size(), 13);
  auto dx = dy;
  rope_backward(dx.data(), pos.data(), cs.data(), sn.data(), n, h, hs);
  auto dxr = dy;
  rope_backward_ref(dxr.data(), pos.data(), cs.data(), sn.data(), n, h, hs);
  expect_close(dx, dxr, 1e-6, "rope dx vs reference");
  expect_fd(x, dx, [&] {
    auto t = x;
    rope_forward(t.data(), pos.data(), cs.data(), sn.data(), n, h, hs);
    return dot(t, dy);
  }, "rope dx");
}

TEST(Kernels, SwigluForwardBackward) {
  const int64_t n = 257;
  auto g = randn(n, 14, 2.0f), u = randn(n, 15);
  std::vector<float> y(n), yr(n);
  swiglu_forward(y.data(), g.data(), u.data(), n);
  swiglu_forward_ref(yr.data(), g.data(), u.data(), n);
  expect_close(y, yr, 1e-6, "swiglu");
  auto dy = randn(n, 16);
  std::vector<float> dg(n, 0.0f), du(n, 0.0f), dgr(n, 0.0f), dur(n, 0.0f);
  swiglu_backward(dg.data(), du.data(), dy.data(), g.data(), u.data(), n);
  swiglu_backward_ref(dgr.data(), dur.data(), dy.data(), g.data(), u.data(), n);
  expect_close(dg, dgr, 1e-5, "swiglu dgate vs ref");
  expect_close(du, dur, 1e-5, "swiglu dup vs ref");
  auto loss = [&] {
    swiglu_forward(y.data(), g.data(), u.data(), n);
    return dot(y, dy);
  };
  expect_fd(g, dg, loss, "swiglu dgate");
  expect_fd(u, du, loss, "swiglu dup");
}

TEST(Kernels, LinearForwardBackwardWithAndWithoutBias) {
  const int64_t n = 19, ic = 23, oc = 17;
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    auto x = randn(static_cast<size_t>(n * ic), 17), w = randn(static_cast<size_t>(oc * ic), 18);
    auto b = randn(static_cast<size_t>(oc), 19);
    const float* bp = with_bias ? b.data() : nullptr;
    std::vector<float> y(static_cast<size_t>(n * oc)), yr(y.size());
    linear_forward(y.data(), x.data(), w.data(), bp, n, ic, oc);
    linear_forward_ref(yr.data(), x.data(), w.data(), bp, n, ic, oc);
    expect_close(y, yr, 1e-4, "linear");
    auto dy = randn(y.size(), 20);
    std::vector<float> dx(x.size(), 0.0f), dw(w.size(), 0.0f), db(b.size(), 0.0f);
    std::vector<float> dxr(x.size(), 0.0f), dwr(w.size(), 0.0f), dbr(b.size(), 0.0f);
    linear_backward(dx.data(), dw.data(), with_bias ? db.data() : nullptr, dy.data(), x.data(),
                    w.data(), n, ic, oc);
    linear_backward_ref(dxr.data(), dwr.data(), with_bias ? dbr.data() : nullptr, dy.data(),
                        x.data(), w.data(), n, ic, oc);
    expect_close(dx, dxr, 1e-4, "linear dx");
    expect_close(dw, dwr, 1e-4, "linear dw");
    expect_close(db, dbr, 1e-4, "linear db");
    auto loss = [&] {
      linear_forward(y.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, n, ic, oc);
      return dot(y, dy);
    };
    expect_fd(x, dx, loss, "linear dx");
    expect_fd(w, dw, loss, "linear dw");
    if (with_bias) expect_fd(b, db, loss, "linear db");
  }
}

TEST(Kernels, LinearFewRowsPathMatchesReference) {
  // n <= 16 takes the register-blocked path (n = 32 checks the sgemm path); odd sizes exercise its row/output/k tails.
  for (int64_t n : {1, 3, 4, 7, 16, 32}) {
    const int64_t ic = 37, oc = 13;
    auto x = randn(static_cast<size_t>(n * ic), 60), w = randn(static_cast<size_t>(oc * ic), 61);
    auto b = randn(static_cast<size_t>(oc), 62);
    std::vector<float> y(static_cast<size_t>(n * oc)), yr(y.size());
    linear_forward(y.data(), x.data(), w.data(), b.data(), n, ic, oc);
    linear_forward_ref(yr.data(), x.data(), w.data(), b.data(), n, ic, oc);
    expect_close(y, yr, 1e-5, "linear few rows");
    auto acc = randn(y.size(), 63), accr = acc;
    linear_accumulate(acc.data(), x.data(), w.data(), n, ic, oc);
    std::vector<float> t(y.size());
    linear_forward_ref(t.data(), x.data(), w.data(), nullptr, n, ic, oc);
    for (size_t i = 0; i < t.size(); ++i) accr[i] += t[i];
    expect_close(acc, accr, 1e-5, "linear_accumulate few rows");
  }
  // And the GEMM path of linear_accumulate.
  const int64_t n = 40, ic = 33, oc = 21;
  auto x = randn(static_cast<size_t>(n * ic), 64), w = randn(static_cast<size_t>(oc * ic), 65);
  auto acc = randn(static_cast<size_t>(n * oc), 66), accr = acc;
  linear_accumulate(acc.data(), x.data(), w.data(), n, ic, oc);
  std::vector<float> t(acc.size());
  linear_forward_ref(t.data(), x.data(), w.data(), nullptr, n, ic, oc);
  for (size_t i = 0; i < t.size(); ++i) accr[i] += t[i];
  expect_close(acc, accr, 1e-4, "linear_accumulate gemm");
}
