// Token sampler (see sampling.h). One vectorised pass computes the tempered exps (they give the
// reported log-softmax and, for plain temperature sampling, the draw itself); everything else
// (penalty, bans, greedy, top_k / top_p / min_p) runs the stages of sampler_chain.h in a fixed order.
#include "engine/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "engine/sampler_chain.h"
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
  // General path: the sampler chain (sampler_chain.h) on a copy of the logits, in its fixed order
  // (vLLM's): repetition penalty, bans, argmax (greedy stops there), temperature softmax, top_k,
  // top_p, min_p, draw.
  std::memcpy(s, z, sizeof(float) * static_cast<size_t>(v));
  thread_local Candidates c;
  c.reset(s, v);
  apply_repetition_penalty(c, history, p.repetition_penalty);
  apply_bans(c, banned);
  const int32_t best = argmax(c);
  if (!(s[best] > -std::numeric_limits<float>::infinity()))
    throw ValueError("sampling", "every token is banned or masked; nothing can be sampled");
  if (greedy) {
    out.token = best;
    out.logprob = report(best);
    return out;
  }
  apply_temperature_softmax(c, inv_t, best);
  apply_top_k(c, p.top_k);
  apply_top_p(c, p.top_p);
  apply_min_p(c, p.min_p, best);
  const int32_t pick = draw(c, rng);
  out.token = pick;
  out.logprob = report(pick);
  return out;
}

}  // namespace trinity::engine
