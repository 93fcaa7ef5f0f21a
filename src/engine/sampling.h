// Sampling parameters and the per-token sampler of the generation engine.
// Order of operations on a row of logits z (vLLM's order): repetition penalty, min_tokens (EOS and
// stop ids masked), temperature, then top_k / top_p / min_p filtering, then a draw (the stages of
// sampler_chain.h; plain tempered sampling takes a fast path with the same distribution).
// The logprob REPORTED for the drawn token is log_softmax(z / temperature) over the full vocabulary
// without penalties or filtering — exactly what the trainer recomputes for the same weights, so PPO
// ratios start at 1. Temperature 0 is greedy and reports log_softmax(z) (temperature 1); so is any
// temperature below kGreedyTemperature (1e-5, vLLM's threshold): 1/T would overflow float or leave no
// token with mass. A row with NaN or +inf logits is refused (ValueError) instead of drawing from it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "engine/constraint.h"

namespace trinity::engine {

// Temperatures below this are greedy (argmax), reported as temperature 1 like temperature 0.
inline constexpr double kGreedyTemperature = 1e-5;

struct SamplingParams {
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = -1;  // -1 or 0: off
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  int64_t max_tokens = 16;
  int64_t min_tokens = 0;
  std::vector<std::string> stop;         // stop strings (need a tokenizer)
  std::vector<int32_t> stop_token_ids;   // in addition to the model's EOS ids
  bool ignore_eos = false;
  std::optional<uint64_t> seed;          // per request; sample i uses stream (seed, i)
  int64_t n = 1;
  int64_t top_logprobs = 0;              // alternatives reported per token (0..20)
  // Constrained decoding (structured output): null = none. The reported logprobs are then those of
  // the masked distribution (log_softmax over the allowed tokens), see constraint.h.
  std::shared_ptr<const ConstraintFactory> constraint;
  // Throws ValueError("[sampling] <field> ...") naming the offending field.
  void validate() const;
};

struct TokenChoice {
  int32_t token = 0;
  float logprob = 0.0f;                             // log_softmax(z / T)[token]
  std::vector<std::pair<int32_t, float>> top;       // top alternatives by that same logprob
};

// Samples one token from logits [V] (not modified: penalties and masks go to `scratch`, reused
// memory). `history` are the prompt and generated ids (for the repetition penalty); `banned` ids
// get -inf before sampling (min_tokens). Throws ValueError("[sampling] ...") when the row has a NaN
// or +inf logit or no token with mass (the caller fails only that request). Thread-safe for distinct rng/scratch (rows
// in parallel).
TokenChoice sample_token(float* logits, int64_t v, const SamplingParams& p,
                         const std::vector<int32_t>& history, const std::vector<int32_t>& banned,
                         Rng& rng, std::vector<float>& scratch);

}  // namespace trinity::engine
