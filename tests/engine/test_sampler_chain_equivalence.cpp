// The sampler chain must not change results: sample_token (now built from sampler_chain.h stages) is
// compared, bit for bit (token, reported logprob, top alternatives, Rng state afterwards), with a
// verbatim copy of the monolithic sampler it replaced, over random rows, parameters, histories and
// bans at V in {2, 17, 1000, 151936}. So the comparison has power, the same harness must tell the
// reference apart from mutants of itself (top_k and top_p swapped; min_p before top_p).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "engine/sampling.h"
#include "tensor/vmath.h"

using namespace trinity;
using namespace trinity::engine;

namespace {

// ---- the reference: sample_token as it was before the chain (commit 7bb71b3), unchanged except for
// the `mutant` switch that reorders two filters (kNone keeps the original order).

enum class Mutant { kNone, kSwapTopKTopP, kMinPBeforeTopP };

float ref_max_of(const float* z, int64_t v) {
  int64_t i = 0;
  float m = -std::numeric_limits<float>::infinity();
  if (v >= 16) {
    tensor::v16f acc = tensor::v16_load(z);
    for (i = 16; i + 16 <= v; i += 16) {
      const tensor::v16f x = tensor::v16_load(z + i);
      acc = x > acc ? x : acc;
    }
    for (int l = 0; l < 16; ++l) m = std::max(m, acc[l]);
  }
  for (; i < v; ++i) m = std::max(m, z[i]);
  return m;
}

double ref_exp_tempered(float* e, const float* z, float inv_t, float shift, int64_t v) {
  double lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= v; i += 16) {
    const tensor::v16f x = tensor::v16_exp(tensor::v16_load(z + i) * inv_t - shift);
    tensor::v16_store(e + i, x);
    for (int l = 0; l < 16; ++l) lanes[l] += static_cast<double>(x[l]);
  }
  double sum = 0;
  for (double l : lanes) sum += l;
  for (; i < v; ++i) {
    e[i] = std::exp(z[i] * inv_t - shift);
    sum += static_cast<double>(e[i]);
  }
  return sum;
}

TokenChoice ref_sample_token(float* z, int64_t v, const SamplingParams& p, const std::vector<int32_t>& history,
                             const std::vector<int32_t>& banned, Rng& rng, std::vector<float>& scratch,
                             Mutant mutant = Mutant::kNone) {
  for (int64_t i = 0; i < v; ++i)
    if (std::isnan(z[i]) || z[i] == std::numeric_limits<float>::infinity())
      throw ValueError("sampling",
                       strcat("logits are not finite (token ", i, " has ", z[i], "); this request cannot be sampled"));
  const bool greedy = p.temperature < kGreedyTemperature;
  const double t = greedy ? 1.0 : p.temperature;
  const float inv_t = static_cast<float>(1.0 / t);
  if (static_cast<int64_t>(scratch.size()) < v) scratch.resize(static_cast<size_t>(v));
  float* s = scratch.data();
  const float mx = ref_max_of(z, v) * inv_t;
  const double sum = ref_exp_tempered(s, z, inv_t, mx, v);
  const double lse = static_cast<double>(mx) + std::log(sum);
  auto report = [&](int32_t tok) { return static_cast<float>(static_cast<double>(z[tok] * inv_t) - lse); };
  TokenChoice out;
  if (p.top_logprobs > 0) {
    std::vector<int32_t> idx(static_cast<size_t>(v));
    std::iota(idx.begin(), idx.end(), 0);
    const auto k = static_cast<std::ptrdiff_t>(std::min<int64_t>(p.top_logprobs, v));
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
    for (std::ptrdiff_t i = 0; i < k; ++i)
      out.top.push_back({idx[static_cast<size_t>(i)], report(idx[static_cast<size_t>(i)])});
  }
  if (!(sum > 0) || !std::isfinite(mx))
    throw ValueError("sampling", "every token has logit -inf; nothing can be sampled");
  const bool plain = !greedy && p.repetition_penalty == 1.0 && banned.empty() && (p.top_k <= 0 || p.top_k >= v) &&
                     p.top_p >= 1.0 && p.min_p <= 0.0;
  if (plain) {
    double r = rng.uniform() * sum;
    int64_t i = 0;
    for (; i + 16 <= v; i += 16) {
      double b = 0;
      for (int l = 0; l < 16; ++l) b += static_cast<double>(s[i + l]);
      if (r < b) break;
      r -= b;
    }
    int32_t pick = -1;
    for (; i < v; ++i) {
      if (s[i] > 0) pick = static_cast<int32_t>(i);
      r -= static_cast<double>(s[i]);
      if (r < 0 && pick >= 0) break;
    }
    if (pick < 0 || r >= 0)
      for (int64_t j = v - 1; j >= 0; --j)
        if (s[j] > 0) {
          pick = static_cast<int32_t>(j);
          break;
        }
    if (pick < 0) throw ValueError("sampling", "no token has probability mass; nothing can be sampled");
    out.token = pick;
    out.logprob = report(pick);
    return out;
  }
  std::memcpy(s, z, sizeof(float) * static_cast<size_t>(v));
  if (p.repetition_penalty != 1.0) {
    const float rp = static_cast<float>(p.repetition_penalty);
    std::vector<int32_t> seen = history;
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t id : seen)
      if (id >= 0 && id < v) s[id] = s[id] > 0 ? s[id] / rp : s[id] * rp;
  }
  for (int32_t id : banned)
    if (id >= 0 && id < v) s[id] = -std::numeric_limits<float>::infinity();
  int32_t best = 0;
  for (int64_t i = 1; i < v; ++i)
    if (s[i] > s[best]) best = static_cast<int32_t>(i);
  if (!(s[best] > -std::numeric_limits<float>::infinity()))
    throw ValueError("sampling", "every token is banned or masked; nothing can be sampled");
  if (greedy) {
    out.token = best;
    out.logprob = report(best);
    return out;
  }
  const float smax = s[best] * inv_t;
  std::vector<int32_t> cand;
  cand.reserve(static_cast<size_t>(v));
  for (int64_t i = 0; i < v; ++i) {
    s[i] = std::isinf(s[i]) && s[i] < 0 ? 0.0f : std::exp(s[i] * inv_t - smax);
    if (s[i] > 0) cand.push_back(static_cast<int32_t>(i));
  }
  auto by_prob = [&](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); };
  auto top_k = [&] {
    if (p.top_k > 0 && p.top_k < static_cast<int64_t>(cand.size())) {
      std::nth_element(cand.begin(), cand.begin() + p.top_k, cand.end(), by_prob);
      cand.resize(static_cast<size_t>(p.top_k));
    }
  };
  auto top_p = [&] {
    double total = 0;
    for (int32_t id : cand) total += s[id];
    if (p.top_p < 1.0) {
      size_t pre = std::min<size_t>(cand.size(), 256);
      for (;;) {
        std::partial_sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(pre), cand.end(), by_prob);
        double acc = 0;
        size_t keep = 0;
        bool reached = false;
        while (keep < pre) {
          acc += s[cand[keep]] / total;
          ++keep;
          if (acc >= p.top_p) {
            reached = true;
            break;
          }
        }
        if (reached || pre == cand.size()) {
          cand.resize(std::max<size_t>(keep, 1));
          break;
        }
        pre = std::min(cand.size(), pre * 8);
      }
    }
  };
  auto min_p = [&] {
    if (p.min_p > 0) {
      const float thr = static_cast<float>(p.min_p);
      cand.erase(std::remove_if(cand.begin(), cand.end(), [&](int32_t id) { return s[id] < thr; }), cand.end());
      if (cand.empty()) cand.push_back(best);
    }
  };
  if (mutant == Mutant::kSwapTopKTopP) {
    top_p();
    top_k();
    min_p();
  } else if (mutant == Mutant::kMinPBeforeTopP) {
    top_k();
    min_p();
    top_p();
  } else {
    top_k();
    top_p();
    min_p();
  }
  double total = 0;
  for (int32_t id : cand) total += s[id];
  double r = rng.uniform() * total;
  int32_t pick = cand.back();
  for (int32_t id : cand) {
    r -= s[id];
    if (r < 0) {
      pick = id;
      break;
    }
  }
  out.token = pick;
  out.logprob = report(pick);
  return out;
}

// ---- random cases

struct Case {
  std::vector<float> z;  // [V]
  SamplingParams p;
  std::vector<int32_t> history, banned;
  uint64_t seed = 0;
};

Case random_case(Rng& g, int64_t v) {
  Case c;
  c.z.resize(static_cast<size_t>(v));
  const double scale = 0.5 + 4.0 * g.uniform();
  const bool ties = g.uniform() < 0.3;  // quantised logits: many exact ties in probability
  for (auto& x : c.z) {
    x = static_cast<float>(scale * g.normal());
    if (ties) x = std::round(x * 2.0f) / 2.0f;
  }
  if (g.uniform() < 0.5)  // a head of likely tokens
    for (int i = 0, n = static_cast<int>(g.below(8)); i < n; ++i) c.z[g.below(static_cast<uint64_t>(v))] += 8.0f;
  if (g.uniform() < 0.2)  // masked tokens (a constraint)
    for (auto& x : c.z)
      if (g.uniform() < 0.5) x = -std::numeric_limits<float>::infinity();
  if (g.uniform() < 0.01) std::fill(c.z.begin(), c.z.end(), -std::numeric_limits<float>::infinity());
  SamplingParams& p = c.p;
  const double u = g.uniform();
  p.temperature = u < 0.1 ? 0.0 : u < 0.13 ? 1e-6 : 0.05 + 2.5 * g.uniform();
  const double k = g.uniform();
  p.top_k = k < 0.3    ? -1
            : k < 0.35 ? 0
            : k < 0.45 ? 1
            : k < 0.8  ? 1 + static_cast<int64_t>(g.below(static_cast<uint64_t>(std::min<int64_t>(v, 200))))
            : k < 0.9  ? 1 + static_cast<int64_t>(g.below(static_cast<uint64_t>(v)))
                       : v + static_cast<int64_t>(g.below(3));
  const double q = g.uniform();
  p.top_p = q < 0.35 ? 1.0 : q < 0.4 ? 1e-3 : q < 0.45 ? 0.9999 : std::max(1e-3, g.uniform());
  const double m = g.uniform();
  p.min_p = m < 0.5 ? 0.0 : m < 0.55 ? 1.0 : 0.3 * g.uniform();
  p.repetition_penalty = g.uniform() < 0.4 ? 1.0 : 0.5 + 1.5 * g.uniform();
  p.top_logprobs = g.uniform() < 0.7 ? 0 : static_cast<int64_t>(g.below(6));
  for (int i = 0, n = static_cast<int>(g.below(60)); i < n; ++i)
    c.history.push_back(static_cast<int32_t>(g.below(static_cast<uint64_t>(v) + 4)) - 2);  // dups, out of range
  const double b = g.uniform();
  if (b < 0.3)
    for (int i = 0, n = 1 + static_cast<int>(g.below(5)); i < n; ++i)
      c.banned.push_back(static_cast<int32_t>(g.below(static_cast<uint64_t>(v))));
  else if (b < 0.32)
    for (int64_t i = 0; i < v; ++i) c.banned.push_back(static_cast<int32_t>(i));  // all banned: both throw
  c.seed = g.next_u64();
  return c;
}

// One sampler call's observable result: token, logprob and top bits, or the error; the Rng state after.
struct Outcome {
  std::optional<TokenChoice> choice;
  std::string error;
  uint64_t rng_after = 0;
};

template <class F>
Outcome run(const Case& c, F sampler) {
  Outcome o;
  auto z = c.z;
  Rng rng(c.seed);
  std::vector<float> scratch;
  try {
    o.choice = sampler(z.data(), static_cast<int64_t>(z.size()), c.p, c.history, c.banned, rng, scratch);
  } catch (const ValueError& e) {
    o.error = e.what();
  }
  o.rng_after = rng.next_u64();
  return o;
}

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Empty when equal, else what differs.
std::string diff(const Outcome& a, const Outcome& b) {
  if (a.error != b.error) return strcat("error '", a.error, "' vs '", b.error, "'");
  if (a.rng_after != b.rng_after) return "rng state after the call";
  if (!a.choice) return "";
  const TokenChoice &x = *a.choice, &y = *b.choice;
  if (x.token != y.token) return strcat("token ", x.token, " vs ", y.token);
  if (bits(x.logprob) != bits(y.logprob)) return strcat("logprob ", x.logprob, " vs ", y.logprob);
  if (x.top.size() != y.top.size()) return "top size";
  for (size_t i = 0; i < x.top.size(); ++i)
    if (x.top[i].first != y.top[i].first || bits(x.top[i].second) != bits(y.top[i].second)) return "top entry";
  return "";
}

// Fewer cases at V = 151936: a top_p-only draw there sorts a growing prefix of up to 150k ids (~25 ms,
// ~10x that under ASan).
int cases_for(int64_t v) {
  return v > 100000 ? 120 : v >= 1000 ? 1500 : 4000;
}

const int64_t kVocabs[] = {2, 17, 1000, 151936};

}  // namespace

TEST(SamplerChain, BitwiseEqualToTheMonolithicSampler) {
  Rng g(2024);
  int general = 0, both_filters = 0, errors = 0;
  for (int64_t v : kVocabs) {
    for (int i = 0; i < cases_for(v); ++i) {
      const Case c = random_case(g, v);
      const Outcome want = run(c, [](auto&&... a) { return ref_sample_token(a...); });
      const Outcome got = run(c, [](auto&&... a) { return sample_token(a...); });
      const std::string d = diff(want, got);
      ASSERT_EQ(d, "") << "V " << v << " case " << i << " T " << c.p.temperature << " top_k " << c.p.top_k << " top_p "
                       << c.p.top_p << " min_p " << c.p.min_p << " rp " << c.p.repetition_penalty;
      errors += !want.error.empty();
      const bool plain = c.p.repetition_penalty == 1.0 && c.banned.empty() && (c.p.top_k <= 0 || c.p.top_k >= v) &&
                         c.p.top_p >= 1.0 && c.p.min_p <= 0.0;
      if (want.error.empty() && c.p.temperature >= kGreedyTemperature && !plain) {
        ++general;
        both_filters += c.p.top_k > 0 && c.p.top_k < v && c.p.top_p < 1.0;
      }
    }
  }
  // The cases reach the chain's sampling stages, with both order-sensitive filters, and the errors.
  EXPECT_GT(general, 3000);
  EXPECT_GT(both_filters, 700);
  EXPECT_GT(errors, 50);
}

// The harness above can fail: reordering filters in the reference changes results it detects.
TEST(SamplerChain, ComparisonCatchesReorderedFilters) {
  for (Mutant mutant : {Mutant::kSwapTopKTopP, Mutant::kMinPBeforeTopP}) {
    Rng g(2024);
    int caught = 0;
    for (int64_t v : {int64_t{17}, int64_t{1000}}) {
      for (int i = 0; i < cases_for(v); ++i) {
        const Case c = random_case(g, v);
        const Outcome want = run(c, [mutant](auto&&... a) { return ref_sample_token(a..., mutant); });
        const Outcome got = run(c, [](auto&&... a) { return sample_token(a...); });
        caught += !diff(want, got).empty();
      }
    }
    EXPECT_GT(caught, 20) << "mutant " << static_cast<int>(mutant);
  }
}
