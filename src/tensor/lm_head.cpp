// Chunked logprob/entropy head (see lm_head.h). Each chunk: one GEMM for the logits, a parallel
// pass over rows for lse / logprob / entropy; backward turns the chunk into dlogits in place and
// runs two GEMMs (dh += G W, dW += G^T h). With a `keep` buffer the forward's logits are kept and
// the backward skips the recompute GEMM.
#include "tensor/lm_head.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "tensor/blas.h"
#include "tensor/vmath.h"

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

namespace {

struct RowStats {
  double lse, mean_z;  // log-sum-exp and sum_k p_k z_k
};

// One pass for the max, one for the exp sums (vectorised exp, float lanes flushed into doubles).
RowStats row_stats(const float* z, int64_t v) {
  const int64_t nv = v / 16 * 16;
  float mx = -std::numeric_limits<float>::infinity();
  if (nv > 0) {
    v16f m = v16_load(z);
    for (int64_t k = 16; k < nv; k += 16) {
      const v16f x = v16_load(z + k);
      m = x > m ? x : m;
    }
    for (int l = 0; l < 16; ++l) mx = std::max(mx, m[l]);
  }
  for (int64_t k = nv; k < v; ++k) mx = std::max(mx, z[k]);
  double s1 = 0.0, s2 = 0.0;
  v16f a1 = v16f{}, a2 = v16f{};
  int64_t since = 0;
  for (int64_t k = 0; k < nv; k += 16) {
    const v16f x = v16_load(z + k);
    const v16f e = v16_exp(x - mx);
    a1 += e;
    a2 += e * x;
    if (++since == 32) {
      for (int l = 0; l < 16; ++l) s1 += a1[l], s2 += a2[l];
      a1 = a2 = v16f{};
      since = 0;
    }
  }
  for (int l = 0; l < 16; ++l) s1 += a1[l], s2 += a2[l];
  for (int64_t k = nv; k < v; ++k) {
    const double e = std::exp(static_cast<double>(z[k] - mx));
    s1 += e;
    s2 += e * static_cast<double>(z[k]);
  }
  return {static_cast<double>(mx) + std::log(s1), s2 / s1};
}

// z <- d loss / d z for one row: -glp * p - gent * p * (log p + H), plus glp at the target.
void row_grad(float* z, int64_t v, float lse, float h, float glp, float gent, int32_t target) {
  const int64_t nv = v / 16 * 16;
  for (int64_t k = 0; k < nv; k += 16) {
    const v16f logp = v16_load(z + k) - lse;
    const v16f p = v16_exp(logp);
    v16_store(z + k, -glp * p - gent * p * (logp + h));
  }
  for (int64_t k = nv; k < v; ++k) {
    const float logp = z[k] - lse;
    const float p = std::exp(logp);
    z[k] = -glp * p - gent * p * (logp + h);
  }
  z[target] += glp;
}

void head_gemms(float* dh, float* dw, const float* g, const float* h, const float* w, int64_t rows,
                const HeadShape& s) {
  gemm(false, false, static_cast<int>(rows), static_cast<int>(s.c), static_cast<int>(s.v), 1.0f, g,
       static_cast<int>(s.v), w, static_cast<int>(s.c), 1.0f, dh, static_cast<int>(s.c));
  if (dw)
    gemm(true, false, static_cast<int>(s.v), static_cast<int>(s.c), static_cast<int>(rows), 1.0f, g,
         static_cast<int>(s.v), h, static_cast<int>(s.c), 1.0f, dw, static_cast<int>(s.c));
}

}  // namespace

void lm_head_forward(float* logprob, float* entropy, float* lse, const float* h, const float* w,
                     const int32_t* target, HeadShape s, float* keep) {
  const int64_t cr = keep ? s.m : chunk_rows(s);
  std::vector<float> buf(keep ? 0 : static_cast<size_t>(cr * s.v));
  for (int64_t r0 = 0; r0 < s.m; r0 += cr) {
    const int64_t rows = std::min(cr, s.m - r0);
    float* z0 = keep ? keep + r0 * s.v : buf.data();
    logits_chunk(z0, h + r0 * s.c, w, rows, s);
    parallel_for(rows, [&](int64_t i) {
      const float* z = z0 + i * s.v;
      const RowStats st = row_stats(z, s.v);
      const int64_t r = r0 + i;
      lse[r] = static_cast<float>(st.lse);
      logprob[r] = static_cast<float>(static_cast<double>(z[target[r]]) - st.lse);
      entropy[r] = static_cast<float>(st.lse - st.mean_z);
    });
  }
}

void lm_head_backward(float* dh, float* dw, const float* dlogprob, const float* dentropy,
                      const float* h, const float* w, const int32_t* target, const float* lse,
                      const float* entropy, HeadShape s, float* kept) {
  const int64_t cr = kept ? s.m : chunk_rows(s);
  std::vector<float> buf(kept ? 0 : static_cast<size_t>(cr * s.v));
  for (int64_t r0 = 0; r0 < s.m; r0 += cr) {
    const int64_t rows = std::min(cr, s.m - r0);
    float* z0 = kept ? kept + r0 * s.v : buf.data();
    if (!kept) logits_chunk(z0, h + r0 * s.c, w, rows, s);
    parallel_for(rows, [&](int64_t i) {
      const int64_t r = r0 + i;
      row_grad(z0 + i * s.v, s.v, lse[r], entropy[r], dlogprob[r] * s.inv_temp,
               dentropy[r] * s.inv_temp, target[r]);
    });
    head_gemms(dh + r0 * s.c, dw, z0, h + r0 * s.c, w, rows, s);
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

void lm_head_backward_ref(float* dh, float* dw, const float* dlogprob, const float* dentropy, const float* h,
                          const float* w, const int32_t* target, HeadShape s) {
  // z = inv_temp h W^T; dz_k = dlogprob ([k == t] - p_k) - dentropy p_k (log p_k + H);
  // dh += inv_temp dz W;  dw += inv_temp dz^T h.
  std::vector<double> z(static_cast<size_t>(s.v));
  for (int64_t r = 0; r < s.m; ++r) {
    double mx = -1e300;
    for (int64_t k = 0; k < s.v; ++k) {
      double acc = 0;
      for (int64_t j = 0; j < s.c; ++j) acc += static_cast<double>(h[r * s.c + j]) * w[k * s.c + j];
      z[static_cast<size_t>(k)] = acc * s.inv_temp;
      mx = std::max(mx, z[static_cast<size_t>(k)]);
    }
    double sum = 0;
    for (double x : z) sum += std::exp(x - mx);
    const double lse = mx + std::log(sum);
    double ent = 0;
    for (double x : z) ent -= std::exp(x - lse) * (x - lse);
    for (int64_t k = 0; k < s.v; ++k) {
      const double logp = z[static_cast<size_t>(k)] - lse, p = std::exp(logp);
      const double dz = dlogprob[r] * ((k == target[r] ? 1.0 : 0.0) - p) - dentropy[r] * p * (logp + ent);
      for (int64_t j = 0; j < s.c; ++j) {
        dh[r * s.c + j] += static_cast<float>(s.inv_temp * dz * w[k * s.c + j]);
        if (dw) dw[k * s.c + j] += static_cast<float>(s.inv_temp * dz * h[r * s.c + j]);
      }
    }
  }
}

}  // namespace trinity::tensor
