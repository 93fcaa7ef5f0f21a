// Helpers for the algorithm tests: owned [B, T] arrays that view as a TokenBatch, random data with
// importance ratios kept away from clip boundaries, and a central finite-difference checker.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "algorithm/batch.h"
#include "core/rng.h"

namespace trinity::algo::test {

struct Data {
  int64_t B = 0, T = 0;
  std::vector<float> lp, old, ref, adv, ent, mask;  // [B, T]
  std::vector<uint8_t> expert;                       // [B]
  std::vector<uint8_t> keep;                         // [B, T] mini-batch token mask (m2po); optional
  int64_t step = 0;

  TokenBatch batch(int64_t b0 = 0, int64_t nb = -1) const {
    if (nb < 0) nb = B - b0;
    auto s = [&](const std::vector<float>& v) {
      return v.empty() ? std::span<const float>()
                       : std::span<const float>(v).subspan(static_cast<size_t>(b0 * T), static_cast<size_t>(nb * T));
    };
    TokenBatch mb;
    mb.B = nb, mb.T = T;
    mb.logprob = s(lp), mb.old_logprob = s(old), mb.ref_logprob = s(ref), mb.advantages = s(adv);
    mb.entropy = s(ent), mb.mask = s(mask);
    if (!expert.empty()) mb.is_expert = std::span<const uint8_t>(expert).subspan(static_cast<size_t>(b0), static_cast<size_t>(nb));
    if (!keep.empty())
      mb.keep = std::span<const uint8_t>(keep).subspan(static_cast<size_t>(b0 * T), static_cast<size_t>(nb * T));
    mb.train_step = step;
    return mb;
  }
};

// Ratio bands that avoid every clip boundary used by the default args (0.8/1.2, 1/1.3, 1.28, 1, 3, ...).
inline double safe_ratio(Rng& rng) {
  static const double lo[] = {0.5, 0.86, 1.03, 1.22, 1.33, 3.3};
  static const double hi[] = {0.74, 0.97, 1.15, 1.26, 1.6, 4.0};
  const size_t k = static_cast<size_t>(rng.below(6));
  return lo[k] + (hi[k] - lo[k]) * rng.uniform();
}

// Random batch: rows of varying length (trailing padding masked), one interior masked token, one
// fully masked row when B >= 4, advantages per row (sign varies), ratios from safe_ratio.
inline Data random_data(uint64_t seed, int64_t B, int64_t T, bool experts = false) {
  Rng rng(seed);
  Data d;
  d.B = B, d.T = T;
  const size_t n = static_cast<size_t>(B * T);
  d.lp.resize(n), d.old.resize(n), d.ref.resize(n), d.adv.resize(n), d.ent.resize(n), d.mask.resize(n);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(T)));
    const double a = (rng.uniform() - 0.5) * 3.0;
    for (int64_t t = 0; t < T; ++t) {
      const size_t i = static_cast<size_t>(b * T + t);
      d.old[i] = static_cast<float>(-0.2 - 2.5 * rng.uniform());
      d.lp[i] = static_cast<float>(d.old[i] + std::log(safe_ratio(rng)));
      if (d.lp[i] > -0.05f) d.lp[i] = -0.05f - static_cast<float>(rng.uniform() * 0.1);  // keep p < 1
      d.ref[i] = static_cast<float>(d.lp[i] + (rng.uniform() - 0.5) * 1.5);
      d.adv[i] = static_cast<float>(a);
      d.ent[i] = static_cast<float>(0.1 + 2 * rng.uniform());
      d.mask[i] = t < len ? 1.0f : 0.0f;
    }
    if (len > 2) d.mask[static_cast<size_t>(b * T + 1)] = 0.0f;  // an interior non-action token
  }
  if (B >= 4)
    for (int64_t t = 0; t < T; ++t) d.mask[static_cast<size_t>(2 * T + t)] = 0.0f;  // row 2 fully masked
  if (experts) {
    d.expert.resize(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) d.expert[static_cast<size_t>(b)] = (b % 3 == 1) ? 1 : 0;
  }
  return d;
}

// Compares analytic gradients with central differences of `loss_of` w.r.t. data.lp (or another array)
// at every masked token; the perturbation is the float-rounded step actually taken.
inline void expect_fd(Data& d, std::vector<float>& wrt, const std::vector<float>& analytic,
                      const std::function<double()>& loss_of, const std::string& what, double h = 1e-3,
                      double rtol = 3e-3, double atol = 2e-6) {
  ASSERT_EQ(analytic.size(), wrt.size()) << what;
  for (size_t i = 0; i < wrt.size(); ++i) {
    const float x = wrt[i];
    const float xp = static_cast<float>(x + h), xm = static_cast<float>(x - h);
    wrt[i] = xp;
    const double fp = loss_of();
    wrt[i] = xm;
    const double fm = loss_of();
    wrt[i] = x;
    const double fd = (fp - fm) / (static_cast<double>(xp) - static_cast<double>(xm));
    EXPECT_NEAR(analytic[i], fd, atol + rtol * std::fabs(fd)) << what << " at flat index " << i << " (row "
                                                               << static_cast<int64_t>(i) / d.T << ")";
    if (d.mask[i] == 0) {
      EXPECT_EQ(analytic[i], 0.0f) << what << ": gradient on a masked token, index " << i;
    }
  }
}

}  // namespace trinity::algo::test
