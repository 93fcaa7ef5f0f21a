// Sampler chain (llama.cpp style, after src/llama-sampling.cpp): named stages over one candidate set.
// sample_token's general path runs them in a fixed order (vLLM's, and Trinity's since the start):
//   repetition penalty -> bans (min_tokens) -> argmax [greedy stops here] -> temperature softmax
//   -> top_k -> top_p -> min_p -> draw.
// Ordering rule everywhere: descending probability, equal probability -> lower id first. The stages
// are deterministic: for the same inputs and Rng they pick the same token, bit for bit (the chain
// replaced a monolithic sampler and must match it; tests/engine/test_sampler_chain.cpp keeps it).
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace trinity::engine {

// The tokens still in play. `values` is indexed by token id (not by candidate), so the logit stages
// touch only the ids they change. Two phases:
//  - logits (probs == false): every id 0..V-1 is a candidate, in id order; `ids` is not used.
//  - relative probabilities (probs == true, after apply_temperature_softmax): values[id] =
//    exp(logit * inv_t - max), so the most likely token of the vocabulary has 1 up to rounding (the
//    compiler may fuse logit * inv_t - max into an FMA, leaving exp(rounding error)) and the values do
//    not sum to 1 (a stage that needs the mass divides by the candidates' sum). `ids` lists the
//    candidates; values of ids not listed are stale and never read.
struct Candidates {
  float* values = nullptr;   // [V] by token id; not owned (the sampler's scratch row)
  int64_t v = 0;             // vocabulary size V
  std::vector<int32_t> ids;  // candidates in their current order (probs phase only)
  bool probs = false;        // values are relative probabilities, see above
  bool sorted = false;       // ids are in descending value, equal value -> lower id first

  // Starts the logits phase over values [V] (keeps the capacity of `ids` for reuse).
  void reset(float* values_row, int64_t vocab) {
    values = values_row;
    v = vocab;
    ids.clear();
    probs = false;
    sorted = false;
  }
  int64_t size() const { return probs ? static_cast<int64_t>(ids.size()) : v; }
};

// Logits phase. Divides a positive logit by `penalty` and multiplies a non-positive one by it (CTRL,
// as vLLM/HF), once per distinct id of `history` (ids outside [0, V) are ignored). Reads and writes
// values[id] of those ids only; penalty 1 is a no-op.
void apply_repetition_penalty(Candidates& c, const std::vector<int32_t>& history, double penalty);

// Logits phase. values[id] = -inf for each id of `banned` in [0, V) (min_tokens: EOS and stop ids).
void apply_bans(Candidates& c, const std::vector<int32_t>& banned);

// Logits phase. The id with the largest value, the lowest id among equals (greedy decoding's pick).
// Reads all V values; the caller checks values[result] > -inf (otherwise everything is banned).
int32_t argmax(const Candidates& c);

// Logits -> relative probabilities: values[id] = exp(values[id] * inv_t - values[top] * inv_t), 0 for
// -inf; `top` is argmax(c). Lists in `ids`, in id order, every id whose probability is > 0 (so the
// set is never empty: top has ~1). Reads and writes all V values; sets probs, clears sorted.
void apply_temperature_softmax(Candidates& c, float inv_t, int32_t top);

// Probs phase. Keeps the k most probable candidates (equal probability -> lower id kept); k <= 0 or
// k >= size is a no-op. Their order is unspecified (nth_element) unless the set was already sorted,
// in which case it is truncated and stays sorted.
void apply_top_k(Candidates& c, int64_t k);

// Probs phase. Keeps the shortest prefix, in descending probability (equal -> lower id first), whose
// mass reaches top_p of the candidates' total mass (the token that crosses p is kept; at least one
// token is). top_p >= 1 is a no-op. Sorts only a growing prefix (256, then x8) until it holds that
// mass; afterwards the set is sorted.
void apply_top_p(Candidates& c, double top_p);

// Probs phase. Keeps the candidates with relative probability >= min_p (as a float), i.e. at least
// min_p times the top probability of the vocabulary (which is ~1); the order is kept. min_p <= 0 is
// a no-op. If none is left (min_p 1 and the top's value rounded below 1, or a set without the top),
// keeps `fallback` alone (sample_token passes argmax).
void apply_min_p(Candidates& c, double min_p, int32_t fallback);

// Probs phase. Draws one candidate with probability proportional to its value: one rng.uniform(),
// inverse CDF over `ids` in their current order (sum in double); if rounding runs past the end, the
// last candidate. The set must not be empty.
int32_t draw(const Candidates& c, Rng& rng);

}  // namespace trinity::engine
