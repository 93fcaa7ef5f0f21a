// Sampler chain stages, each against a naive reference written here: repetition penalty and bans
// (per id), argmax (lowest id among equals), temperature softmax (double exps), top_k / top_p (a full
// sort, equal probability -> lower id first), min_p (a filter), draw (inverse CDF on the same Rng).
// Rows with many exact ties check the tie-breaking; sets past 256 and 2048 candidates check top_p's
// growing sorted prefix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "core/rng.h"
#include "engine/sampler_chain.h"

using namespace trinity;
using namespace trinity::engine;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Random logits [V]; `ties`: rounded to 0.5 so many are exactly equal.
std::vector<float> random_logits(Rng& g, int64_t v, bool ties) {
  std::vector<float> z(static_cast<size_t>(v));
  for (auto& x : z) {
    x = static_cast<float>(2.0 * g.normal());
    if (ties) x = std::round(x * 2.0f) / 2.0f;
  }
  return z;
}

// A probs-phase candidate set over `values` (relative probabilities, max ~1) listing every id.
Candidates probs_of(std::vector<float>& values) {
  Candidates c;
  c.reset(values.data(), static_cast<int64_t>(values.size()));
  c.ids.resize(values.size());
  std::iota(c.ids.begin(), c.ids.end(), 0);
  c.probs = true;
  return c;
}

// Relative probabilities exp(z - max) of random_logits (the top is 1), in id order.
std::vector<float> random_probs(Rng& g, int64_t v, bool ties) {
  std::vector<float> z = random_logits(g, v, ties);
  const float mx = *std::max_element(z.begin(), z.end());
  for (auto& x : z) x = std::exp(x - mx);
  return z;
}

// The naive order: a full sort, descending probability, equal -> lower id first.
std::vector<int32_t> sorted_ids(const std::vector<float>& s, std::vector<int32_t> ids) {
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
  return ids;
}

}  // namespace

TEST(SamplerStages, RepetitionPenaltyOncePerDistinctId) {
  Rng g(1);
  for (int rep = 0; rep < 50; ++rep) {
    const int64_t v = 1 + static_cast<int64_t>(g.below(60));
    std::vector<float> z = random_logits(g, v, rep % 2 == 0);
    z[0] = 0.0f;
    if (v > 1) z[1] = -kInf;
    std::vector<int32_t> hist;
    for (int i = 0, n = static_cast<int>(g.below(40)); i < n; ++i)
      hist.push_back(static_cast<int32_t>(g.below(static_cast<uint64_t>(v) + 6)) - 3);
    const double pen = 0.3 + 2.0 * g.uniform();
    std::vector<float> want = z;
    const float rp = static_cast<float>(pen);
    for (int64_t id = 0; id < v; ++id)
      if (std::count(hist.begin(), hist.end(), static_cast<int32_t>(id)) > 0) {
        float& x = want[static_cast<size_t>(id)];
        x = x > 0 ? x / rp : x * rp;
      }
    std::vector<float> got = z;
    Candidates c;
    c.reset(got.data(), v);
    apply_repetition_penalty(c, hist, pen);
    EXPECT_EQ(got, want);
    got = z;
    apply_repetition_penalty(c, hist, 1.0);
    EXPECT_EQ(got, z) << "penalty 1 is a no-op";
  }
}

TEST(SamplerStages, BansAndArgmax) {
  Rng g(2);
  for (int rep = 0; rep < 100; ++rep) {
    const int64_t v = 1 + static_cast<int64_t>(g.below(50));
    std::vector<float> z = random_logits(g, v, true);  // ties: argmax must take the lowest id
    std::vector<int32_t> banned;
    for (int i = 0, n = static_cast<int>(g.below(6)); i < n; ++i)
      banned.push_back(static_cast<int32_t>(g.below(static_cast<uint64_t>(v) + 4)) - 2);
    std::vector<float> want = z;
    for (int32_t id : banned)
      if (id >= 0 && id < v) want[static_cast<size_t>(id)] = -kInf;
    Candidates c;
    c.reset(z.data(), v);
    apply_bans(c, banned);
    EXPECT_EQ(z, want);
    const float mx = *std::max_element(want.begin(), want.end());
    const auto first = std::find(want.begin(), want.end(), mx) - want.begin();
    EXPECT_EQ(argmax(c), first);
  }
}

TEST(SamplerStages, TemperatureSoftmaxListsTokensWithMass) {
  Rng g(3);
  for (int rep = 0; rep < 50; ++rep) {
    const int64_t v = 1 + static_cast<int64_t>(g.below(300));
    std::vector<float> z = random_logits(g, v, rep % 2 == 0);
    for (int i = 0; i < 5; ++i) z[g.below(static_cast<uint64_t>(v))] = -kInf;
    z[g.below(static_cast<uint64_t>(v))] = 3.0f;  // a finite top
    const float inv_t = static_cast<float>(1.0 / (0.1 + 2.0 * g.uniform()));
    std::vector<float> s = z;
    Candidates c;
    c.reset(s.data(), v);
    const int32_t top = argmax(c);
    apply_temperature_softmax(c, inv_t, top);
    EXPECT_TRUE(c.probs);
    EXPECT_FALSE(c.sorted);
    // 1 up to rounding: x * inv_t - max may be fused into an FMA (exp of the product's rounding error).
    EXPECT_NEAR(s[static_cast<size_t>(top)], 1.0f, 1e-6f) << "the top token has relative probability 1";
    std::vector<int32_t> want_ids;
    const double mx = static_cast<double>(z[static_cast<size_t>(top)]) * inv_t;
    for (int64_t i = 0; i < v; ++i) {
      const double want = z[static_cast<size_t>(i)] == -kInf
                              ? 0.0
                              : std::exp(z[static_cast<size_t>(i)] * static_cast<double>(inv_t) - mx);
      EXPECT_NEAR(s[static_cast<size_t>(i)], want, 1e-5 * want + 1e-37) << "id " << i;
      if (s[static_cast<size_t>(i)] > 0) want_ids.push_back(static_cast<int32_t>(i));
    }
    EXPECT_EQ(c.ids, want_ids) << "every id with mass, in id order";
  }
}

TEST(SamplerStages, TopKKeepsTheKMostProbableLowerIdOnTies) {
  Rng g(4);
  for (int rep = 0; rep < 200; ++rep) {
    const int64_t v = 1 + static_cast<int64_t>(g.below(rep < 150 ? 40 : 3000));
    std::vector<float> s = random_probs(g, v, rep % 3 != 0);
    const int64_t k = static_cast<int64_t>(g.below(static_cast<uint64_t>(v) + 3)) - 1;  // -1 .. v+1
    Candidates c = probs_of(s);
    std::vector<int32_t> all = c.ids;
    apply_top_k(c, k);
    std::vector<int32_t> want = sorted_ids(s, all);
    if (k > 0 && k < v) want.resize(static_cast<size_t>(k));
    std::vector<int32_t> got = c.ids;
    EXPECT_EQ(std::set<int32_t>(got.begin(), got.end()), std::set<int32_t>(want.begin(), want.end())) << "k " << k;
    EXPECT_EQ(got.size(), want.size());
    // A sorted set is truncated and stays sorted.
    Candidates sc = probs_of(s);
    sc.ids = sorted_ids(s, all);
    sc.sorted = true;
    apply_top_k(sc, k);
    EXPECT_EQ(sc.ids, want);
    EXPECT_TRUE(sc.sorted);
  }
}

TEST(SamplerStages, TopPKeepsTheShortestPrefixReachingP) {
  Rng g(5);
  for (int rep = 0; rep < 300; ++rep) {
    // Mostly small sets; some past 256 and 2048 (flat rows need most of them), so the sorted prefix grows.
    const int64_t v = 1 + static_cast<int64_t>(g.below(rep % 4 == 0 ? 6000 : 60));
    std::vector<float> s = random_probs(g, v, rep % 2 == 0);
    if (rep % 8 == 0)
      for (auto& x : s) x = 0.5f + 0.5f * static_cast<float>(g.uniform());  // flat
    const double top_p = rep % 10 == 0 ? 1.0 : rep % 10 == 1 ? 1e-4 : g.uniform();
    Candidates c = probs_of(s);
    // Some sets arrive in an arbitrary order (after top_k's nth_element).
    if (rep % 3 == 0)
      for (size_t i = c.ids.size(); i > 1; --i) std::swap(c.ids[i - 1], c.ids[g.below(i)]);
    const std::vector<int32_t> before = c.ids;
    apply_top_p(c, top_p);
    std::vector<int32_t> want = before;
    if (top_p < 1.0) {
      double total = 0;
      for (int32_t id : before) total += s[static_cast<size_t>(id)];  // same order as the stage: same bits
      want = sorted_ids(s, before);
      double acc = 0;
      size_t keep = 0;
      while (keep < want.size()) {
        acc += s[static_cast<size_t>(want[keep++])] / total;
        if (acc >= top_p) break;
      }
      want.resize(std::max<size_t>(keep, 1));
      EXPECT_TRUE(c.sorted);
    }
    EXPECT_EQ(c.ids, want) << "v " << v << " top_p " << top_p;
    // Already sorted input gives the same prefix without sorting.
    Candidates sc = probs_of(s);
    sc.ids = sorted_ids(s, before);
    sc.sorted = true;
    apply_top_p(sc, top_p);
    if (top_p < 1.0) {
      EXPECT_EQ(sc.ids, want);
    }
  }
}

TEST(SamplerStages, MinPKeepsTokensAboveTheFractionOfTheTop) {
  Rng g(6);
  for (int rep = 0; rep < 100; ++rep) {
    const int64_t v = 1 + static_cast<int64_t>(g.below(200));
    std::vector<float> s = random_probs(g, v, rep % 2 == 0);
    const double min_p = rep % 10 == 0 ? 0.0 : rep % 10 == 1 ? 1.0 : g.uniform();
    Candidates c = probs_of(s);
    for (size_t i = c.ids.size(); i > 1; --i) std::swap(c.ids[i - 1], c.ids[g.below(i)]);
    std::vector<int32_t> want;
    for (int32_t id : c.ids)
      if (min_p <= 0 || s[static_cast<size_t>(id)] >= static_cast<float>(min_p)) want.push_back(id);
    apply_min_p(c, min_p, -1);
    EXPECT_EQ(c.ids, want) << "order kept";
  }
  // Nothing reaches min_p (a set without the top token): the fallback alone.
  std::vector<float> s = {0.25f, 0.5f, 0.125f};
  Candidates c = probs_of(s);
  apply_min_p(c, 0.9, 7);
  EXPECT_EQ(c.ids, std::vector<int32_t>{7});
}

TEST(SamplerStages, DrawIsTheInverseCdfOfTheCandidatesInOrder) {
  Rng g(7);
  for (int rep = 0; rep < 2000; ++rep) {
    const int64_t v = 1 + static_cast<int64_t>(g.below(30));
    std::vector<float> s = random_probs(g, v, rep % 2 == 0);
    Candidates c = probs_of(s);
    for (size_t i = c.ids.size(); i > 1; --i) std::swap(c.ids[i - 1], c.ids[g.below(i)]);
    c.ids.resize(1 + g.below(c.ids.size()));
    const uint64_t seed = g.next_u64();
    Rng a(seed), b(seed);
    const int32_t got = draw(c, a);
    // Naive: the first candidate whose cumulative mass exceeds u * total.
    double total = 0;
    for (int32_t id : c.ids) total += s[static_cast<size_t>(id)];
    const double target = b.uniform() * total;
    double cum = 0;
    int32_t want = c.ids.back();
    for (int32_t id : c.ids) {
      cum += s[static_cast<size_t>(id)];
      if (cum > target) {
        want = id;
        break;
      }
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(a.next_u64(), b.next_u64()) << "one uniform per draw";
  }
  // Frequencies follow the values: 1 : 3 : 0 over ids {2, 0, 1}.
  std::vector<float> s = {3.0f, 0.0f, 1.0f};
  Candidates c = probs_of(s);
  c.ids = {2, 0, 1};
  Rng rng(8);
  int n0 = 0, n1 = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const int32_t t = draw(c, rng);
    n0 += t == 0;
    n1 += t == 1;
  }
  EXPECT_EQ(n1, 0) << "a candidate without mass is never drawn";
  EXPECT_NEAR(static_cast<double>(n0) / n, 0.75, 0.01);
}
