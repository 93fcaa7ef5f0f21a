// Token sampler (see sampling.h).
#include "engine/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

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

TokenChoice sample_token(float* z, int64_t v, const SamplingParams& p,
                         const std::vector<int32_t>& history, const std::vector<int32_t>& banned,
                         Rng& rng, std::vector<float>& scratch) {
  const double t = p.temperature > 0 ? p.temperature : 1.0;
  const float inv_t = static_cast<float>(1.0 / t);
  // Reported logprobs: log_softmax(z / T) of the unmodified logits, sums in double.
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < v; ++i) mx = std::max(mx, z[i] * inv_t);
  double sum = 0;
  for (int64_t i = 0; i < v; ++i) sum += std::exp(static_cast<double>(z[i] * inv_t - mx));
  const double lse = static_cast<double>(mx) + std::log(sum);
  auto report = [&](int32_t tok) { return static_cast<float>(static_cast<double>(z[tok] * inv_t) - lse); };
  TokenChoice out;
  if (p.top_logprobs > 0) {
    std::vector<int32_t> idx(static_cast<size_t>(v));
    std::iota(idx.begin(), idx.end(), 0);
    const auto k = static_cast<std::ptrdiff_t>(std::min<int64_t>(p.top_logprobs, v));
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
    for (std::ptrdiff_t i = 0; i < k; ++i) out.top.push_back({idx[static_cast<size_t>(i)], report(idx[static_cast<size_t>(i)])});
  }
  // Now modify a copy for sampling.
  scratch.assign(z, z + v);
  float* s = scratch.data();
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
  if (p.temperature == 0.0) {
    out.token = best;
    out.logprob = report(best);
    return out;
  }
  // Probabilities of the tempered, penalised logits.
  const float smax = s[best] * inv_t;
  std::vector<int32_t> cand;
  cand.reserve(static_cast<size_t>(v));
  for (int64_t i = 0; i < v; ++i) {
    s[i] = std::isinf(s[i]) && s[i] < 0 ? 0.0f : std::exp(s[i] * inv_t - smax);
    if (s[i] > 0) cand.push_back(static_cast<int32_t>(i));
  }
  const bool need_sort = (p.top_k > 0 && p.top_k < static_cast<int64_t>(cand.size())) || p.top_p < 1.0;
  if (need_sort) std::sort(cand.begin(), cand.end(), [&](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
  if (p.top_k > 0 && p.top_k < static_cast<int64_t>(cand.size())) cand.resize(static_cast<size_t>(p.top_k));
  double total = 0;
  for (int32_t id : cand) total += s[id];
  if (p.top_p < 1.0) {
    double acc = 0;
    size_t keep = 0;
    while (keep < cand.size()) {
      acc += s[cand[keep]] / total;
      ++keep;
      if (acc >= p.top_p) break;
    }
    cand.resize(std::max<size_t>(keep, 1));
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
