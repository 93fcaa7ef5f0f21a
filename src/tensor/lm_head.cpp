// Chunked logprob/entropy head (see lm_head.h). Each chunk: one GEMM for the logits, a parallel
// pass over rows for lse / logprob / entropy; backward turns the chunk into dlogits in place and
// runs two GEMMs (dh += G W, dW += G^T h).
#include "tensor/lm_head.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "tensor/blas.h"

namespace trinity::tensor {

namespace {

int64_t chunk_rows(const HeadShape& s) {
  const int64_t budget = 16 * 1024 * 1024;  // floats per chunk (64 MB)
  return std::clamp<int64_t>(budget / std::max<int64_t>(s.v, 1), 1, std::max<int64_t>(s.m, 1));
}

void logits_chunk(float* buf, const float* h, const float* w, int64_t rows, const HeadShape& s) {
  gemm(false, true, static_cast<int>(rows), static_cast<int>(s.v), static_cast<int>(s.c), s.inv_temp,
       h, static_cast<int>(s.c), w, static_cast<int>(s.c), 0.0f, buf, static_cast<int>(s.v));
}

}  // namespace

void lm_head_forward(float* logprob, float* entropy, float* lse, const float* h, const float* w,
                     const int32_t* target, HeadShape s) {
  const int64_t cr = chunk_rows(s);
  std::vector<float> buf(static_cast<size_t>(cr * s.v));
  for (int64_t r0 = 0; r0 < s.m; r0 += cr) {
    const int64_t rows = std::min(cr, s.m - r0);
    logits_chunk(buf.data(), h + r0 * s.c, w, rows, s);
    parallel_for(rows, [&](int64_t i) {
      const float* z = buf.data() + i * s.v;
      float mx = z[0];
      for (int64_t k = 1; k < s.v; ++k) mx = std::max(mx, z[k]);
      double s1 = 0.0, s2 = 0.0;
      for (int64_t k = 0; k < s.v; ++k) {
        const double e = std::exp(static_cast<double>(z[k] - mx));
        s1 += e;
        s2 += e * static_cast<double>(z[k]);
      }
      const double l = static_cast<double>(mx) + std::log(s1);
      const int64_t r = r0 + i;
      lse[r] = static_cast<float>(l);
      logprob[r] = static_cast<float>(static_cast<double>(z[target[r]]) - l);
      entropy[r] = static_cast<float>(l - s2 / s1);
    });
  }
}

void lm_head_backward(float* dh, float* dw, const float* dlogprob, const float* dentropy,
                      const float* h, const float* w, const int32_t* target, const float* lse,
                      const float* entropy, HeadShape s) {
  const int64_t cr = chunk_rows(s);
  std::vector<float> buf(static_cast<size_t>(cr * s.v));
  for (int64_t r0 = 0; r0 < s.m; r0 += cr) {
    const int64_t rows = std::min(cr, s.m - r0);
    logits_chunk(buf.data(), h + r0 * s.c, w, rows, s);
    parallel_for(rows, [&](int64_t i) {
      float* z = buf.data() + i * s.v;
      const int64_t r = r0 + i;
      const float l = lse[r], hh = entropy[r];
      const float glp = dlogprob[r] * s.inv_temp, gent = dentropy[r] * s.inv_temp;
      for (int64_t k = 0; k < s.v; ++k) {
        const float logp = z[k] - l;
        const float p = std::exp(logp);
        z[k] = -glp * p - gent * p * (logp + hh);
      }
      z[target[r]] += glp;
    });
    gemm(false, false, static_cast<int>(rows), static_cast<int>(s.c), static_cast<int>(s.v), 1.0f,
         buf.data(), static_cast<int>(s.v), w, static_cast<int>(s.c), 1.0f, dh + r0 * s.c,
         static_cast<int>(s.c));
    if (dw)
      gemm(true, false, static_cast<int>(s.v), static_cast<int>(s.c), static_cast<int>(rows), 1.0f,
           buf.data(), static_cast<int>(s.v), h + r0 * s.c, static_cast<int>(s.c), 1.0f, dw,
           static_cast<int>(s.c));
  }
}

void lm_head_forward_ref(float* logprob, float* entropy, const float* h, const float* w,
                         const int32_t* target, HeadShape s) {
  std::vector<double> z(static_cast<size_t>(s.v));
  for (int64_t r = 0; r < s.m; ++r) {
    double mx = -1e300;
    for (int64_t k = 0; k < s.v; ++k) {
      double acc = 0;
      for (int64_t j = 0; j < s.c; ++j) acc += static_cast<double>(h[r * s.c + j]) * w[k * s.c + j];
      z[static_cast<size_t>(k)] = acc * s.inv_temp;
      mx = std::max(mx, z[static_cast<size_t>(k)]);
    }
    double s1 = 0, s2 = 0;
    for (double x : z) {
      s1 += std::exp(x - mx);
      s2 += std::exp(x - mx) * x;
    }
    const double l = mx + std::log(s1);
    logprob[r] = static_cast<float>(z[static_cast<size_t>(target[r])] - l);
    entropy[r] = static_cast<float>(l - s2 / s1);
  }
}

}  // namespace trinity::tensor
