// Sampler distribution at a real vocabulary size (V = 151936, Qwen2's): many seeded draws of
// sample_token against the exact distribution after temperature / top_k / top_p / min_p, computed
// here in double. A chi-square test (p = 1e-6) must accept the right distribution, and — so the test
// has power — must reject near misses: no temperature, top_p without the token that crosses p, and
// min_p relative to the total instead of the top probability.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/rng.h"
#include "engine/sampling.h"

using namespace trinity;
using namespace trinity::engine;

namespace {

constexpr int64_t kV = 151936;

// 24 head tokens with logits 10..14 spread over the vocabulary, the rest N(0, 1): the head holds
// most of the mass, the tail ~150k tokens the rest (so plain sampling must reach into it).
std::vector<float> logits() {
  Rng rng(7);
  std::vector<float> z(static_cast<size_t>(kV));
  for (auto& x : z) x = static_cast<float>(rng.normal());
  for (int i = 0; i < 24; ++i) z[static_cast<size_t>((i * 6151 + 17) % kV)] = 10.0f + 4.0f * static_cast<float>(i) / 23;
  return z;
}

struct Filter {
  double temperature = 1.0, top_p = 1.0, min_p = 0.0;
  int64_t top_k = -1;
  bool keep_crossing = true;  // top_p keeps the token whose mass crosses p (the right rule)
  bool min_p_of_max = true;   // min_p relative to the top probability (the right rule)
};

// Exact probabilities over the vocabulary after the filters (the sampler's order: top_k, top_p, min_p).
std::vector<double> exact(const std::vector<float>& z, const Filter& f) {
  std::vector<double> p(z.size());
  double mx = -1e300;
  for (float x : z) mx = std::max(mx, x / f.temperature);
  for (size_t i = 0; i < z.size(); ++i) p[i] = std::exp(z[i] / f.temperature - mx);
  std::vector<int32_t> ids(z.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  size_t keep = ids.size();
  if (f.top_k > 0) keep = std::min<size_t>(keep, static_cast<size_t>(f.top_k));
  if (f.top_p < 1.0) {
    double total = 0;
    for (size_t i = 0; i < keep; ++i) total += p[ids[i]];
    double acc = 0;
    size_t n = 0;
    while (n < keep) {
      if (!f.keep_crossing && acc + p[ids[n]] / total >= f.top_p) break;
      acc += p[ids[n]] / total;
      ++n;
      if (acc >= f.top_p) break;
    }
    keep = std::max<size_t>(n, 1);
  }
  std::vector<double> out(z.size(), 0.0);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += p[ids[i]];
  for (size_t i = 0; i < keep; ++i) {
    const double rel = f.min_p_of_max ? p[ids[i]] / p[ids[0]] : p[ids[i]] / total;
    if (f.min_p > 0 && rel < f.min_p) continue;
    out[static_cast<size_t>(ids[i])] = p[ids[i]];
  }
  total = std::accumulate(out.begin(), out.end(), 0.0);
  for (auto& x : out) x /= total;
  return out;
}

// Chi-square statistic of counts against probabilities: tokens with an expected count >= 5 are
// bins of their own, the rest (in id order) are pooled into bins of expected count >= 5. A draw of
// a token with probability 0 makes the statistic infinite.
struct Chi2 {
  double stat = 0;
  int64_t dof = 0;
};
Chi2 chi2(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  Chi2 c;
  double pool_e = 0, pool_o = 0;
  int64_t bins = 0;
  auto add = [&](double o, double e) {
    c.stat += (o - e) * (o - e) / e;
    ++bins;
  };
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * static_cast<double>(n);
    if (e == 0) {
      if (counts[i] > 0) c.stat = INFINITY;
      continue;
    }
    if (e >= 5) {
      add(static_cast<double>(counts[i]), e);
      continue;
    }
    pool_e += e, pool_o += static_cast<double>(counts[i]);
    if (pool_e >= 5) add(pool_o, pool_e), pool_e = pool_o = 0;
  }
  if (pool_e > 0) add(pool_o, pool_e);
  c.dof = bins - 1;
  return c;
}

// Upper 1e-6 quantile of chi-square with d degrees of freedom (Wilson-Hilferty).
double crit(int64_t d) {
  const double k = static_cast<double>(d), z = 4.753;
  return k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
}

std::vector<int64_t> draw(const std::vector<float>& z, const SamplingParams& sp, int64_t n, uint64_t seed) {
  std::vector<int64_t> counts(z.size(), 0);
  Rng rng(seed);
  std::vector<float> scratch;
  std::vector<float> row = z;
  for (int64_t i = 0; i < n; ++i)
    ++counts[static_cast<size_t>(sample_token(row.data(), kV, sp, {}, {}, rng, scratch).token)];
  return counts;
}

void expect_fits(const std::vector<int64_t>& counts, int64_t n, const Filter& right, const std::vector<Filter>& wrong,
                 const std::string& what) {
  const auto z = logits();
  const Chi2 ok = chi2(counts, exact(z, right), n);
  ASSERT_GT(ok.dof, 3) << what;
  EXPECT_LT(ok.stat, crit(ok.dof)) << what << ": chi2 " << ok.stat << " with " << ok.dof << " dof";
  for (size_t w = 0; w < wrong.size(); ++w) {
    const Chi2 bad = chi2(counts, exact(z, wrong[w]), n);
    EXPECT_GT(bad.stat, crit(std::max<int64_t>(bad.dof, 1))) << what << ": near miss " << w << " not rejected";
  }
}

}  // namespace

TEST(SamplingDistribution, PlainTemperatureAtFullVocabulary) {
  const auto z = logits();
  SamplingParams sp;
  sp.temperature = 1.3;
  const int64_t n = 10000;
  const auto counts = draw(z, sp, n, 11);
  Filter right{.temperature = 1.3};
  expect_fits(counts, n, right, {Filter{.temperature = 1.0}, Filter{.temperature = 1.6}}, "temperature 1.3");
  int64_t tail = 0;
  for (int64_t i = 0; i < kV; ++i)
    if (z[static_cast<size_t>(i)] < 9) tail += counts[static_cast<size_t>(i)];
  EXPECT_GT(tail, n / 20) << "draws reach the ~150k-token tail";
}

TEST(SamplingDistribution, TopKTopPAndTemperature) {
  const auto z = logits();
  SamplingParams sp;
  sp.temperature = 0.7;
  sp.top_k = 16;
  sp.top_p = 0.9;
  const int64_t n = 3000;
  const auto counts = draw(z, sp, n, 12);
  Filter right{.temperature = 0.7, .top_p = 0.9, .top_k = 16};
  Filter no_temp = right;
  no_temp.temperature = 1.0;
  Filter no_cross = right;
  no_cross.keep_crossing = false;
  expect_fits(counts, n, right, {no_temp, no_cross}, "temperature 0.7, top_k 16, top_p 0.9");
}

TEST(SamplingDistribution, TopPAloneAndMinP) {
  const auto z = logits();
  {
    SamplingParams sp;
    sp.top_p = 0.8;
    const int64_t n = 3000;
    const auto counts = draw(z, sp, n, 13);
    Filter right{.top_p = 0.8};
    Filter no_cross = right;
    no_cross.keep_crossing = false;
    expect_fits(counts, n, right, {no_cross, Filter{.top_p = 0.7}}, "top_p 0.8");
  }
  {
    SamplingParams sp;
    sp.min_p = 0.1;
    sp.temperature = 1.2;
    const int64_t n = 3000;
    const auto counts = draw(z, sp, n, 14);
    Filter right{.temperature = 1.2, .min_p = 0.1};
    Filter of_total = right;
    of_total.min_p_of_max = false;
    expect_fits(counts, n, right, {of_total, Filter{.temperature = 1.2, .min_p = 0.2}}, "min_p 0.1");
  }
}
