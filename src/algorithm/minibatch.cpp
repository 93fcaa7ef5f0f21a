// Mini-batch actor loss over micro-batches with one normaliser (see minibatch.h).
#include "algorithm/minibatch.h"

namespace trinity::algo {

MiniBatchLoss minibatch_actor_loss(const Algorithm& alg, const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                   double max_len, const std::function<TokenBatch(int64_t, int64_t, bool)>& rows,
                                   const std::function<void(int64_t, int64_t, const LossOutput&)>& on_loss) {
  Normalizer norm;
  for (auto [b0, b1] : ranges) norm += Normalizer::of(rows(b0, b1, false));
  if (max_len > 0) norm.max_len = max_len;
  MiniBatchLoss out;
  for (auto [b0, b1] : ranges) {
    const LossOutput lo = alg.actor_loss(rows(b0, b1, true), norm);
    out.loss += lo.loss;
    out.metrics.merge(lo.metrics);
    on_loss(b0, b1, lo);
  }
  return out;
}

}  // namespace trinity::algo
