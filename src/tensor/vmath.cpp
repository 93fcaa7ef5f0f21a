// Vectorised exp helpers (see vmath.h).
#include "tensor/vmath.h"

#include <cmath>

namespace trinity::tensor {

double exp_shifted(float* out, const float* in, float shift, int64_t n) {
  const int64_t nv = n / 16 * 16;
  v16f acc = v16f{};
  double total = 0.0;
  int64_t since_flush = 0;
  for (int64_t i = 0; i < nv; i += 16) {
    const v16f e = v16_exp(v16_load(in + i) - shift);
    v16_store(out + i, e);
    acc += e;
    // Flush the float lanes into the double total regularly to keep the sum exact to ~1e-7.
    if (++since_flush == 64) {
      for (int l = 0; l < 16; ++l) total += acc[l];
      acc = v16f{};
      since_flush = 0;
    }
  }
  for (int l = 0; l < 16; ++l) total += acc[l];
  for (int64_t i = nv; i < n; ++i) {
    const float e = std::exp(in[i] - shift);
    out[i] = e;
    total += e;
  }
  return total;
}

}  // namespace trinity::tensor
