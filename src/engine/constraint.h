// Constrained decoding interface of the engine: a request may carry a ConstraintFactory (e.g. a
// JSON-schema grammar built by the server); each of its samples gets its own Constraint state.
// Before every draw the engine copies the sample's logits row and lets the constraint set the
// logits of forbidden tokens to -inf; the sampler then draws from (and reports the logprob under)
// that masked distribution. After the draw the constraint advances with the chosen token. The
// engine knows nothing about grammars or tokenizers: this interface is all it sees.
#pragma once

#include <cstdint>
#include <memory>

namespace trinity::engine {

class Constraint {
 public:
  virtual ~Constraint() = default;
  // Sets logits[t] = -inf for every token t in [0, v) that may not come next (end-of-generation
  // tokens included when the output so far is not complete). Called on the scheduler's workers,
  // one sample at a time.
  virtual void mask(float* logits, int64_t v) = 0;
  // The sampled token (one that mask allowed). Throws on a token the constraint cannot take.
  virtual void advance(int32_t token) = 0;
};

class ConstraintFactory {
 public:
  virtual ~ConstraintFactory() = default;
  // A fresh state at the start of the output (one per sample). Thread-safe.
  virtual std::unique_ptr<Constraint> start() const = 0;
};

}  // namespace trinity::engine
