// Entropy bonus (Trinity-RFT entropy_loss_fn: default, mix, none). The actor loss gets
//   − entropy_coef · Agg(H)        (a bonus: minimising the loss raises entropy)
// over all rows (default) or only non-expert rows (mix). d(loss)/dH = −entropy_coef · c_b · m_bt.
#pragma once

#include <memory>
#include <span>

#include "algorithm/aggregation.h"
#include "algorithm/metrics.h"
#include "algorithm/registry.h"

namespace trinity::algo {

enum class EntropyKind { kDefault, kMix, kNone };

class EntropyFn {
 public:
  EntropyFn(EntropyKind kind, double coef) : kind_(kind), coef_(coef) {}
  EntropyKind kind() const { return kind_; }
  double coef() const { return coef_; }
  // Returns the contribution to the loss (−coef·Agg(H)); adds into dentropy [B, T]. Metrics:
  // entropy_loss = Agg(H) (unscaled, as Trinity logs it) and entropy_coef. `none`: 0, no metrics.
  double loss(const TokenBatch& mb, const Normalizer& norm, AggMode mode, std::span<float> dentropy,
              Metrics& metrics) const;

 private:
  EntropyKind kind_;
  double coef_;
};

const Registry<EntropyFn>& entropy_registry();  // kind "entropy_loss_fn"

}  // namespace trinity::algo
