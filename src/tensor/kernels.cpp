// Fast CPU kernels (see kernels.h). Row loops run on the OpenMP pool; matmuls go to BLAS sgemm.
// Reductions over rows (dweight) use partial sums per fixed block of rows, reduced in block order so
// results depend neither on the thread count nor on scheduling.
#include "tensor/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "tensor/blas.h"
#include "tensor/vmath.h"

namespace trinity::tensor {

void embedding_forward(float* out, const int32_t* ids, const float* wte, int64_t n, int64_t c) {
  parallel_for(n, [&](int64_t i) {
    std::memcpy(out + i * c, wte + static_cast<int64_t>(ids[i]) * c, sizeof(float) * c);
  });
}

void embedding_backward(float* dwte, const float* dout, const int32_t* ids, int64_t n, int64_t c) {
  // Rows may repeat ids: split the channels across threads instead of the rows.
  const int64_t nt = num_threads();
  const int64_t chunk = (c + nt - 1) / nt;
  parallel_for(nt, [&](int64_t t) {
    const int64_t c0 = t * chunk, c1 = std::min(c, c0 + chunk);
    for (int64_t i = 0; i < n; ++i) {
      float* d = dwte + static_cast<int64_t>(ids[i]) * c;
      const float* g = dout + i * c;
      for (int64_t j = c0; j < c1; ++j) d[j] += g[j];
    }
  });
}

void rmsnorm_forward(float* out, float* rstd, const float* in, const float* w, int64_t n,
                     int64_t c, float eps) {
  parallel_for(n, [&](int64_t i) {
    const float* x = in + i * c;
    float* y = out + i * c;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t j = 0; j < c; ++j) ss += x[j] * x[j];
    const float r = 1.0f / std::sqrt(ss / static_cast<float>(c) + eps);
    rstd[i] = r;
    for (int64_t j = 0; j < c; ++j) y[j] = w[j] * (x[j] * r);
  }, 2 * c);
}

void rmsnorm_backward(float* din, float* dw, const float* dout, const float* in, const float* w,
                      const float* rstd, int64_t n, int64_t c) {
  // dw: one partial sum per fixed block of rows (blocks are taken dynamically), added in block
  // order: the result does not depend on the thread count or on which thread ran a block.
  constexpr int64_t kRows = 32;
  const int64_t blocks = (n + kRows - 1) / kRows;
  std::vector<float> partial(dw ? static_cast<size_t>(blocks) * static_cast<size_t>(c) : 0, 0.0f);
  parallel_for(
      blocks,
      [&](int64_t b) {
        float* pdw = dw ? partial.data() + static_cast<size_t>(b) * static_cast<size_t>(c) : nullptr;
        for (int64_t i = b * kRows; i < std::min(n, (b + 1) * kRows); ++i) {
          const float* x = in + i * c;
          const float* g = dout + i * c;
          float* dx = din + i * c;
          const float r = rstd[i];
          float dot = 0.0f;  // sum_j g_j w_j x_j
#pragma omp simd reduction(+ : dot)
          for (int64_t j = 0; j < c; ++j) dot += g[j] * w[j] * x[j];
          const float k = dot * r * r * r / static_cast<float>(c);
          for (int64_t j = 0; j < c; ++j) {
            dx[j] += g[j] * w[j] * r - k * x[j];
            if (pdw) pdw[j] += g[j] * x[j] * r;
          }
        }
      },
      6 * c * kRows);
  for (int64_t b = 0; b < blocks && dw; ++b) {
    const float* p = partial.data() + static_cast<size_t>(b) * static_cast<size_t>(c);
    for (int64_t j = 0; j < c; ++j) dw[j] += p[j];
  }
}

void rope_forward(float* x, const int32_t* pos, const float* cos_t, const float* sin_t, int64_t n,
                  int64_t h, int64_t hs) {
  const int64_t half = hs / 2;
  parallel_for(n, [&](int64_t i) {
    const float* cs = cos_t + static_cast<int64_t>(pos[i]) * half;
    const float* sn = sin_t + static_cast<int64_t>(pos[i]) * half;
    for (int64_t hh = 0; hh < h; ++hh) {
      float* v = x + (i * h + hh) * hs;
      for (int64_t j = 0; j < half; ++j) {
        const float x1 = v[j], x2 = v[j + half];
        v[j] = x1 * cs[j] - x2 * sn[j];
        v[j + half] = x2 * cs[j] + x1 * sn[j];
      }
    }
  }, 2 * h * hs);
}

void rope_backward(float* dx, const int32_t* pos, const float* cos_t, const float* sin_t,
                   int64_t n, int64_t h, int64_t hs) {
  const int64_t half = hs / 2;
  parallel_for(n, [&](int64_t i) {
    const float* cs = cos_t + static_cast<int64_t>(pos[i]) * half;
    const float* sn = sin_t + static_cast<int64_t>(pos[i]) * half;
    for (int64_t hh = 0; hh < h; ++hh) {
      float* v = dx + (i * h + hh) * hs;
      for (int64_t j = 0; j < half; ++j) {
        const float g1 = v[j], g2 = v[j + half];
        v[j] = g1 * cs[j] + g2 * sn[j];
        v[j + half] = g2 * cs[j] - g1 * sn[j];
      }
    }
  });
}

// SiLU via the vectorised exp (sigmoid(g) = 1 / (1 + exp(-g))), 16 lanes at a time + scalar tail.
void swiglu_forward(float* out, const float* gate, const float* up, int64_t n_elems) {
  const int64_t blk = 4096;
  parallel_for((n_elems + blk - 1) / blk, [&](int64_t b) {
    const int64_t e = std::min(n_elems, (b + 1) * blk);
    int64_t i = b * blk;
    for (; i + 16 <= e; i += 16) {
      const v16f g = v16_load(gate + i);
      v16_store(out + i, g / (1.0f + v16_exp(-g)) * v16_load(up + i));
    }
    for (; i < e; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }, blk * 8);
}

void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, int64_t n_elems) {
  const int64_t blk = 4096;
  parallel_for((n_elems + blk - 1) / blk, [&](int64_t b) {
    const int64_t e = std::min(n_elems, (b + 1) * blk);
    int64_t i = b * blk;
    for (; i + 16 <= e; i += 16) {
      const v16f g = v16_load(gate + i), d = v16_load(dout + i);
      const v16f sg = 1.0f / (1.0f + v16_exp(-g));
      v16_store(dup + i, v16_load(dup + i) + d * g * sg);
      v16_store(dgate + i, v16_load(dgate + i) + d * v16_load(up + i) * sg * (1.0f + g * (1.0f - sg)));
    }
    for (; i < e; ++i) {
      const float g = gate[i];
      const float sg = 1.0f / (1.0f + std::exp(-g));
      dup[i] += dout[i] * g * sg;
      dgate[i] += dout[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
    }
  });
}

namespace {

// y[m, o] (+)= x[m, :] . w[o, :] for few rows (decode): streams each weight row once for all rows,
// where sgemm would spend most of its time packing the weights. Register-blocked 4 rows x 4
// outputs with 16-wide vector accumulators (GCC vector extension; plain fp32 FMA, no reassociation
// beyond the fixed lane order). Parallel over blocks of outputs.
inline float hsum(v16f v) {
  float s = 0.0f;
  for (int i = 0; i < 16; ++i) s += v[i];
  return s;
}

void linear_rows_small(float* y, const float* x, const float* w, const float* b, int64_t m,
                       int64_t ic, int64_t oc, bool accumulate) {
  const int64_t kv = ic / 16 * 16;
  const int64_t ob_count = (oc + 3) / 4;
  parallel_for(ob_count, [&](int64_t ob) {
    const int64_t o0 = ob * 4, on = std::min<int64_t>(4, oc - o0);
    const float* wr[4];
    for (int64_t j = 0; j < 4; ++j) wr[j] = w + (o0 + std::min(j, on - 1)) * ic;
    for (int64_t r0 = 0; r0 < m; r0 += 4) {
      const int64_t rn = std::min<int64_t>(4, m - r0);
      const float* xr[4];
      for (int64_t i = 0; i < 4; ++i) xr[i] = x + (r0 + std::min(i, rn - 1)) * ic;
      v16f acc[4][4] = {};
      for (int64_t k = 0; k < kv; k += 16) {
        const v16f w0 = v16_load(wr[0] + k), w1 = v16_load(wr[1] + k), w2 = v16_load(wr[2] + k),
                   w3 = v16_load(wr[3] + k);
        for (int i = 0; i < 4; ++i) {
          const v16f xv = v16_load(xr[i] + k);
          acc[i][0] += xv * w0;
          acc[i][1] += xv * w1;
          acc[i][2] += xv * w2;
          acc[i][3] += xv * w3;
        }
      }
      for (int64_t i = 0; i < rn; ++i)
        for (int64_t j = 0; j < on; ++j) {
          float a = hsum(acc[i][j]);
          for (int64_t k = kv; k < ic; ++k) a += xr[i][k] * wr[j][k];
          if (b) a += b[o0 + j];
          float& out = y[(r0 + i) * oc + o0 + j];
          out = accumulate ? out + a : a;
        }
    }
  }, 4 * m * ic);
}

constexpr int64_t kSmallRows = 16;  // below this many rows, linear layers skip sgemm

}  // namespace

void linear_forward(float* y, const float* x, const float* w, const float* b, int64_t n,
                    int64_t ic, int64_t oc) {
  if (n <= kSmallRows) return linear_rows_small(y, x, w, b, n, ic, oc, false);
  const int in = static_cast<int>(n), iic = static_cast<int>(ic), ioc = static_cast<int>(oc);
  if (b) {
    parallel_for(n, [&](int64_t i) { std::memcpy(y + i * oc, b, sizeof(float) * oc); });
  }
  gemm(false, true, in, ioc, iic, 1.0f, x, iic, w, iic, b ? 1.0f : 0.0f, y, ioc);
}

void linear_accumulate(float* y, const float* x, const float* w, int64_t n, int64_t ic, int64_t oc) {
  if (n <= kSmallRows) return linear_rows_small(y, x, w, nullptr, n, ic, oc, true);
  gemm(false, true, static_cast<int>(n), static_cast<int>(oc), static_cast<int>(ic), 1.0f, x,
       static_cast<int>(ic), w, static_cast<int>(ic), 1.0f, y, static_cast<int>(oc));
}

void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                     const float* w, int64_t n, int64_t ic, int64_t oc) {
  const int in = static_cast<int>(n), iic = static_cast<int>(ic), ioc = static_cast<int>(oc);
  if (dx) gemm(false, false, in, iic, ioc, 1.0f, dy, ioc, w, iic, 1.0f, dx, iic);
  if (dw) gemm(true, false, ioc, iic, in, 1.0f, dy, ioc, x, iic, 1.0f, dw, iic);
  if (db) {
    const int64_t nt = num_threads();
    const int64_t chunk = (oc + nt - 1) / nt;
    parallel_for(nt, [&](int64_t t) {
      const int64_t c0 = t * chunk, c1 = std::min(oc, c0 + chunk);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = c0; j < c1; ++j) db[j] += dy[i * oc + j];
    });
  }
}

void add(float* out, const float* a, const float* b, int64_t n) {
  const int64_t blk = 8192;
  parallel_for((n + blk - 1) / blk, [&](int64_t k) {
    const int64_t e = std::min(n, (k + 1) * blk);
    for (int64_t i = k * blk; i < e; ++i) out[i] = a[i] + b[i];
  }, blk);
}

}  // namespace trinity::tensor
