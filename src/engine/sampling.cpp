// Token sampler (see sampling.h). One vectorised pass computes the tempered exps (they give the
// reported log-softmax and, for plain temperature sampling, the draw itself); filters that need an
// order (top_k, top_p) select or sort only the prefix they keep.
#include "engine/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "tensor/vmath.h"

namespace trinity::engine {

void SamplingParams::validate() const {
  auto bad = [](const char* field, const std::string& why) {
    throw ValueError("sampling", strcat(field, ": ", why));
  };
  if (!(temperature >= 0) || !std::isfinite(temperature)) bad("temperature", strcat("must be >= 0, got ", temperature));
  if (!(top_p > 0 && top_p <= 1)) bad("top_p", strcat("must be in (0, 1], got ", top_p));
  if (top_k < -1) bad("top_k", strcat("must be -1 (off) or >= 0, got ", top_k));
  if (!(min_p >= 0 && min_p <= 1)) bad("min_p", strcat("must be in [0, 1], got ", min_p));
  if (!(repetition_penalty > 0)) bad("repetition_penalty", strcat("must be > 0, got ", repetition_penalty));
  if (max_tokens < 1) bad("max_tokens", strcat("must be >= 1, got ", max_tokens));
  if (min_tokens < 0 || min_tokens > max_tokens)
    bad("min_tokens", strcat("must be in [0, max_tokens], got ", min_tokens));
  if (n < 1 || n > 128) bad("n", strcat("must be in [1, 128], got ", n));
  if (top_logprobs < 0 || top_logprobs > 20) bad("top_logprobs", strcat("must be in [0, 20], got ", top_logprobs));
  for (const auto& s : stop)
    if (s.empty()) bad("stop", "stop strings must not be empty");
}

namespace {

// max_i z[i] (vectorised; NaN-free logits assumed, as everywhere in the sampler).
float max_of(const float* z, int64_t v) {
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

// e[i] = exp(z[i] * inv_t - shift) for all i; returns the sum in double (16 lane sums in double).
double exp_tempered(float* e, const float* z, float inv_t, float shift, int64_t v) {
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

}  // namespace

TokenChoice sample_token(float* z, int64_t v, const SamplingParams& p,
                         const std::vector<int32_t>& history, const std::vector<int32_t>& banned,
                         Rng& rng, std::vector<float>& scratch) {
  // NaN / +inf logits (a broken model or constraint) would poison every draw: refuse the row.
  for (int64_t i = 0; i < v; ++i)
    if (std::isnan(z[i]) || z[i] == std::numeric_limits<float>::infinity())
      throw ValueError("sampling",
                       strcat("logits are not finite (token ", i, " has ", z[i], "); this request cannot be sampled"));
  const bool greedy = p.temperature < kGreedyTemperature;
  const double t = greedy ? 1.0 : p.temperature;
  const float inv_t = static_cast<float>(1.0 / t);
  // Reported logprobs: log_softmax(z / T) of the unmodified logits (sum in double). z * inv_t is
  // monotone in z, so max(z) * inv_t is the max of the tempered logits.
  if (static_cast<int64_t>(scratch.size()) < v) scratch.resize(static_cast<size_t>(v));
  float* s = scratch.data();
  const float mx = max_of(z, v) * inv_t;
  const double sum = exp_tempered(s, z, inv_t, mx, v);  // s = unnormalised probabilities
  const double lse = static_cast<double>(mx) + std::log(sum);
  auto report = [&](int32_t tok) { return static_cast<float>(static_cast<double>(z[tok] * inv_t) - lse); };
  TokenChoice out;
  if (p.top_logprobs > 0) {
    thread_local std::vector<int32_t> idx;
    idx.resize(static_cast<size_t>(v));
    std::iota(idx.begin(), idx.end(), 0);
    const auto k = static_cast<std::ptrdiff_t>(std::min<int64_t>(p.top_logprobs, v));
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
    for (std::ptrdiff_t i = 0; i < k; ++i) out.top.push_back({idx[static_cast<size_t>(i)], report(idx[static_cast<size_t>(i)])});
  }
  if (!(sum > 0) || !std::isfinite(mx))
    throw ValueError("sampling", "every token has logit -inf; nothing can be sampled");
  const bool plain = !greedy && p.repetition_penalty == 1.0 && banned.empty() && (p.top_k <= 0 || p.top_k >= v) &&
                     p.top_p >= 1.0 && p.min_p <= 0.0;
  if (plain) {
    // Plain tempered sampling: the probabilities are the exps just computed. Inverse CDF with a
    // skip over 16-token blocks.
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
    if (pick < 0 || r >= 0)  // rounding left r past the end: the last token with mass
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
  // General path on a modified copy: penalties, bans, then the filters.
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
  // Probabilities of the tempered, penalised logits.
  const float smax = s[best] * inv_t;
  thread_local std::vector<int32_t> cand;
  cand.clear();
  cand.reserve(static_cast<size_t>(v));
  for (int64_t i = 0; i < v; ++i) {
    s[i] = std::isinf(s[i]) && s[i] < 0 ? 0.0f : std::exp(s[i] * inv_t - smax);
    if (s[i] > 0) cand.push_back(static_cast<int32_t>(i));
  }
  // Candidates in descending probability (ties: lower id first) are needed only as a prefix:
  // top_k selects (nth_element), top_p sorts a growing prefix until it holds top_p of the mass.
  auto by_prob = [&](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); };
  if (p.top_k > 0 && p.top_k < static_cast<int64_t>(cand.size())) {
    std::nth_element(cand.begin(), cand.begin() + p.top_k, cand.end(), by_prob);
    cand.resize(static_cast<size_t>(p.top_k));
  }
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
  if (p.min_p > 0) {
    const float thr = static_cast<float>(p.min_p);  // relative to the top probability (max is 1)
    cand.erase(std::remove_if(cand.begin(), cand.end(), [&](int32_t id) { return s[id] < thr; }), cand.end());
    if (cand.empty()) cand.push_back(best);
  }
  total = 0;
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

}  // namespace trinity::engine
