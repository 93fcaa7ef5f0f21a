// One mini-batch's actor loss, run the way the trainer runs it: the normaliser of the whole
// mini-batch first (Σ over micro-batches of Normalizer::of, max_len optionally fixed), then
// actor_loss of each micro-batch against that normaliser, so the summed loss and gradients do not
// depend on how the mini-batch is split. PolicyTrainer::train_step and `trinity debug loss` (the
// PyTorch oracle's entry point) both call this function, so the oracle checks the trainer's glue.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "algorithm/algorithm.h"

namespace trinity::algo {

struct MiniBatchLoss {
  double loss = 0;  // Σ over micro-batches of LossOutput::loss
  Metrics metrics;  // merged LossOutput metrics of every micro-batch
};

// `ranges`: micro-batches as row ranges [b0, b1) in order. `rows(b0, b1, with_policy)` returns the
// micro-batch's TokenBatch; with_policy == false is the normaliser pass (logprob/entropy may be
// empty), true the loss pass (logprob, and entropy if any, filled — the trainer runs the forward
// here; the spans must stay valid until on_loss returns). `on_loss(b0, b1, out)` receives each
// micro-batch's gradients ([b1-b0, T]) in order. `max_len` > 0 overrides Normalizer::max_len.
// A policy loss with a mini-batch mask (m2po) adds a pre-pass: rows(b0, b1, true) for every
// micro-batch first (the trainer runs one more forward each), then the mask over all of them.
// `owned(k)` false skips the loss pass of range k (a data-parallel rank computes only its own
// micro-batches; the normaliser and a mini-batch mask still cover every range); empty: all owned.
MiniBatchLoss minibatch_actor_loss(const Algorithm& alg, const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                   double max_len, const std::function<TokenBatch(int64_t, int64_t, bool)>& rows,
                                   const std::function<void(int64_t, int64_t, const LossOutput&)>& on_loss,
                                   const std::function<bool(size_t)>& owned = {});

}  // namespace trinity::algo
