// Mini-batch actor loss over micro-batches with one normaliser (see minibatch.h).
#include "algorithm/minibatch.h"

#include "core/error.h"

namespace trinity::algo {

MiniBatchLoss minibatch_actor_loss(const Algorithm& alg, const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                   double max_len, const std::function<TokenBatch(int64_t, int64_t, bool)>& rows,
                                   const std::function<void(int64_t, int64_t, const LossOutput&)>& on_loss,
                                   const std::function<bool(size_t)>& owned) {
  Normalizer norm;
  for (auto [b0, b1] : ranges) norm += Normalizer::of(rows(b0, b1, false));
  if (max_len > 0) norm.max_len = max_len;
  MiniBatchLoss out;
  // Mini-batch-level token mask (m2po): one pre-pass with the current policy over every micro-batch,
  // then the mask is computed once over the whole mini-batch.
  std::vector<uint8_t> keep;
  std::vector<size_t> offset;  // start of each range's rows in `keep`, in units of rows
  if (alg.policy_loss().needs_minibatch_mask()) {
    std::vector<float> lp, old, adv, mask;
    int64_t B = 0, T = -1;
    for (auto [b0, b1] : ranges) {
      const TokenBatch tb = rows(b0, b1, true);
      tb.validate("policy_loss_fn mini-batch mask", kNeedOldLogprob | kNeedAdvantages);
      TRINITY_ASSERT(T < 0 || T == tb.T, "micro-batches of one mini-batch differ in T");
      T = tb.T;
      offset.push_back(static_cast<size_t>(B));
      B += tb.B;
      lp.insert(lp.end(), tb.logprob.begin(), tb.logprob.end());
      old.insert(old.end(), tb.old_logprob.begin(), tb.old_logprob.end());
      adv.insert(adv.end(), tb.advantages.begin(), tb.advantages.end());
      mask.insert(mask.end(), tb.mask.begin(), tb.mask.end());
    }
    TokenBatch whole;
    whole.B = B, whole.T = T;
    whole.logprob = lp, whole.old_logprob = old, whole.advantages = adv, whole.mask = mask;
    Metrics mm;
    keep = alg.policy_loss().minibatch_mask(whole, mm);
    out.metrics.merge(mm, "actor/");
  }
  for (size_t k = 0; k < ranges.size(); ++k) {
    if (owned && !owned(k)) continue;
    const auto [b0, b1] = ranges[k];
    TokenBatch tb = rows(b0, b1, true);
    if (!keep.empty())
      tb.keep = std::span<const uint8_t>(keep).subspan(offset[k] * static_cast<size_t>(tb.T),
                                                       static_cast<size_t>(tb.B * tb.T));
    const LossOutput lo = alg.actor_loss(tb, norm);
    out.loss += lo.loss;
    out.metrics.merge(lo.metrics);
    on_loss(b0, b1, lo);
  }
  return out;
}

}  // namespace trinity::algo
