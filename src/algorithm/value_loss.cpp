// Clipped critic loss; see value_loss.h.
#include "algorithm/value_loss.h"

#include <algorithm>

#include "core/error.h"

namespace trinity::algo {

double value_loss(const ValueBatch& vb, const Normalizer& norm, AggMode mode, double c, std::span<float> dvalue,
                  Metrics& metrics) {
  if (vb.B <= 0 || vb.T <= 0) throw ValueError("algorithm", "value loss: empty batch");
  const size_t n = static_cast<size_t>(vb.B * vb.T);
  if (vb.values.size() != n || vb.old_values.size() != n || vb.returns.size() != n || vb.mask.size() != n)
    throw ShapeError("algorithm", strcat("value loss: values, old_values, returns and mask must all have B*T = ", n,
                                         " entries"));
  // Reuse the aggregation weights through a TokenBatch view of the mask.
  TokenBatch mb;
  mb.B = vb.B, mb.T = vb.T, mb.mask = vb.mask, mb.logprob = vb.values;
  const auto scale = agg_row_scale(mode, mb, norm);
  double loss = 0, clipped = 0, vsum = 0;
  for (int64_t b = 0; b < vb.B; ++b) {
    const double cb = scale[static_cast<size_t>(b)];
    for (int64_t t = 0; t < vb.T; ++t) {
      const size_t i = static_cast<size_t>(b * vb.T + t);
      const double m = vb.mask[i];
      if (m == 0) continue;
      const double v = vb.values[i], old = vb.old_values[i], r = vb.returns[i];
      const bool in = v >= old - c && v <= old + c;
      const double vc = std::clamp(v, old - c, old + c);
      const double l1 = (v - r) * (v - r), l2 = (vc - r) * (vc - r);
      const bool use2 = l2 > l1;
      loss += cb * m * 0.5 * (use2 ? l2 : l1);
      if (!dvalue.empty()) {
        const double d = use2 ? (in ? (vc - r) : 0.0) : (v - r);
        dvalue[i] += static_cast<float>(cb * m * d);
      }
      clipped += m * (use2 ? 1.0 : 0.0), vsum += m * v;
    }
  }
  metrics.add("vf_loss", loss);
  metrics.add("vf_clipfrac", safe_div(clipped, norm.tokens));
  metrics.add("vpred_mean", safe_div(vsum, norm.tokens));
  return loss;
}

}  // namespace trinity::algo
