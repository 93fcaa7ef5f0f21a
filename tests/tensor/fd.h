// Finite-difference helpers for kernel gradient tests: central differences of a scalar loss
// L(x) = sum(dout * f(x)) accumulated in double, compared to the analytic gradient.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "core/rng.h"

namespace trinity::test {

inline std::vector<float> randn(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(r.normal()) * scale;
  return v;
}

// Checks grad[i] against (L(x + eps e_i) - L(x - eps e_i)) / (2 eps) for a sample of indices.
inline void expect_fd(std::vector<float>& x, const std::vector<float>& grad,
                      const std::function<double()>& loss, const char* what, double eps = 1e-2,
                      double tol = 2e-2, size_t max_checks = 64) {
  ASSERT_EQ(x.size(), grad.size());
  const size_t step = std::max<size_t>(1, x.size() / max_checks);
  double max_err = 0;
  for (size_t i = 0; i < x.size(); i += step) {
    const float orig = x[i];
    x[i] = orig + static_cast<float>(eps);
    const double lp = loss();
    x[i] = orig - static_cast<float>(eps);
    const double lm = loss();
    x[i] = orig;
    const double fd = (lp - lm) / (2 * eps);
    const double err = std::abs(fd - grad[i]) / std::max(1.0, std::abs(fd));
    max_err = std::max(max_err, err);
    EXPECT_LT(err, tol) << what << " index " << i << ": fd " << fd << " analytic " << grad[i];
  }
}

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

inline void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol,
                         const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tol * std::max(1.0, std::abs(static_cast<double>(b[i]))))
        << what << " at " << i;
}

}  // namespace trinity::test
