// Critic (value) loss for PPO with a value head, as verl computes it (critic.cliprange_value = 0.5):
//   Vc = clip(V, V_old − c, V_old + c);  L = ½·Agg(max((V − R)², (Vc − R)²))
// with R the GAE returns and V_old the values recorded when the advantages were computed. Adds
// d(loss)/dV into dvalue [B, T]; metrics vf_loss, vf_clipfrac, vpred_mean (Trinity logs them as
// critic/*). Aggregation uses the same mini-batch normaliser as the actor loss (batch.h).
#pragma once

#include <span>

#include "algorithm/aggregation.h"
#include "algorithm/metrics.h"

namespace trinity::algo {

struct ValueBatch {
  int64_t B = 0, T = 0;
  std::span<const float> values;      // [B, T] current critic prediction
  std::span<const float> old_values;  // [B, T] prediction at advantage time
  std::span<const float> returns;     // [B, T]
  std::span<const float> mask;        // [B, T]
};

// Returns the loss; adds into dvalue [B, T] when not empty. `norm` is Normalizer::of over the
// mini-batch's masks (only tokens/seqs/max_len are used).
double value_loss(const ValueBatch& vb, const Normalizer& norm, AggMode mode, double cliprange_value,
                  std::span<float> dvalue, Metrics& metrics);

}  // namespace trinity::algo
