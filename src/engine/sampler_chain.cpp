// Sampler chain stages (see sampler_chain.h). Filters that need an order select (top_k) or sort only
// the prefix they keep (top_p), so a 150k vocabulary is never fully sorted.
#include "engine/sampler_chain.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "core/error.h"

namespace trinity::engine {

namespace {

// Descending value, equal value -> lower id first (a strict total order on ids).
struct ByProb {
  const float* s;
  bool operator()(int32_t a, int32_t b) const { return s[a] > s[b] || (s[a] == s[b] && a < b); }
};

}  // namespace

void apply_repetition_penalty(Candidates& c, const std::vector<int32_t>& history, double penalty) {
  TRINITY_ASSERT(!c.probs, "repetition penalty applies to logits");
  if (penalty == 1.0) return;
  const float rp = static_cast<float>(penalty);
  std::vector<int32_t> seen = history;
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  float* s = c.values;
  for (int32_t id : seen)
    if (id >= 0 && id < c.v) s[id] = s[id] > 0 ? s[id] / rp : s[id] * rp;
}

void apply_bans(Candidates& c, const std::vector<int32_t>& banned) {
  TRINITY_ASSERT(!c.probs, "bans apply to logits");
  for (int32_t id : banned)
    if (id >= 0 && id < c.v) c.values[id] = -std::numeric_limits<float>::infinity();
}

int32_t argmax(const Candidates& c) {
  TRINITY_ASSERT(!c.probs && c.v > 0, "argmax runs on the logits of a non-empty vocabulary");
  const float* s = c.values;
  int32_t best = 0;
  float m = s[0];  // == s[best], held in a register: reloading s[best] chains every iteration's load
  for (int64_t i = 1; i < c.v; ++i)
    if (s[i] > m) {
      m = s[i];
      best = static_cast<int32_t>(i);
    }
  return best;
}

void apply_temperature_softmax(Candidates& c, float inv_t, int32_t top) {
  TRINITY_ASSERT(!c.probs, "temperature softmax runs once, on logits");
  float* s = c.values;
  const float smax = s[top] * inv_t;  // read before the loop overwrites s[top]
  c.ids.clear();
  c.ids.reserve(static_cast<size_t>(c.v));
  for (int64_t i = 0; i < c.v; ++i) {
    s[i] = std::isinf(s[i]) && s[i] < 0 ? 0.0f : std::exp(s[i] * inv_t - smax);
    if (s[i] > 0) c.ids.push_back(static_cast<int32_t>(i));
  }
  c.probs = true;
  c.sorted = false;
}

void apply_top_k(Candidates& c, int64_t k) {
  TRINITY_ASSERT(c.probs, "top_k runs on probabilities");
  if (k <= 0 || k >= static_cast<int64_t>(c.ids.size())) return;
  if (!c.sorted) std::nth_element(c.ids.begin(), c.ids.begin() + k, c.ids.end(), ByProb{c.values});
  c.ids.resize(static_cast<size_t>(k));
}

void apply_top_p(Candidates& c, double top_p) {
  TRINITY_ASSERT(c.probs, "top_p runs on probabilities");
  if (top_p >= 1.0 || c.ids.empty()) return;
  const float* s = c.values;
  std::vector<int32_t>& ids = c.ids;
  double total = 0;
  for (int32_t id : ids) total += s[id];
  // A sorted set needs no sorting: its prefix is already the one partial_sort would give (the order
  // is total, so that prefix is unique).
  size_t pre = c.sorted ? ids.size() : std::min<size_t>(ids.size(), 256);
  for (;;) {
    if (!c.sorted) std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(pre), ids.end(), ByProb{s});
    double acc = 0;
    size_t keep = 0;
    bool reached = false;
    while (keep < pre) {
      acc += s[ids[keep]] / total;
      ++keep;
      if (acc >= top_p) {
        reached = true;
        break;
      }
    }
    if (reached || pre == ids.size()) {
      ids.resize(std::max<size_t>(keep, 1));
      break;
    }
    pre = std::min(ids.size(), pre * 8);
  }
  c.sorted = true;
}

void apply_min_p(Candidates& c, double min_p, int32_t fallback) {
  TRINITY_ASSERT(c.probs, "min_p runs on probabilities");
  if (min_p <= 0) return;
  const float thr = static_cast<float>(min_p);  // relative to the top probability (~1)
  const float* s = c.values;
  c.ids.erase(std::remove_if(c.ids.begin(), c.ids.end(), [&](int32_t id) { return s[id] < thr; }), c.ids.end());
  if (c.ids.empty()) c.ids.push_back(fallback);
}

int32_t draw(const Candidates& c, Rng& rng) {
  TRINITY_ASSERT(c.probs && !c.ids.empty(), "draw needs a non-empty set of probabilities");
  const float* s = c.values;
  double total = 0;
  for (int32_t id : c.ids) total += s[id];
  double r = rng.uniform() * total;
  for (int32_t id : c.ids) {
    r -= s[id];
    if (r < 0) return id;
  }
  return c.ids.back();
}

}  // namespace trinity::engine
