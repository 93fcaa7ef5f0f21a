// Paged decode attention (see paged_attention.h). Scores: for each query head and block of up to
// 16 keys, 16 zmm accumulators of q.k partial products are reduced together by a 4-level
// shuffle/add tree into one vector of 16 scores. Softmax with the vectorised exp. Outputs: the
// head's [hs] accumulator lives in hs/16 registers while p_j v_j is added for every key.
#include "tensor/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "tensor/vmath.h"

namespace trinity::tensor {

namespace {

void softmax_rows(float* s, int64_t group, int64_t n) {
  for (int64_t g = 0; g < group; ++g) {
    float* sg = s + g * n;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) m = std::max(m, sg[j]);
    const float inv = static_cast<float>(1.0 / exp_shifted(sg, sg, m, n));
    for (int64_t j = 0; j < n; ++j) sg[j] *= inv;
  }
}

void attend_generic(float* out, int64_t ldo, const float* q, int64_t ldq, int64_t group, int64_t hs,
                    int64_t n, float scale, const float* const* kpages, const float* const* vpages,
                    int64_t ps, int64_t ld, float* s) {
  for (int64_t j = 0; j < n; ++j) {
    const float* kj = kpages[j / ps] + (j % ps) * ld;
    for (int64_t g = 0; g < group; ++g) {
      const float* qg = q + g * ldq;
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (int64_t d = 0; d < hs; ++d) acc += qg[d] * kj[d];
      s[g * n + j] = acc * scale;
    }
  }
  softmax_rows(s, group, n);
  for (int64_t g = 0; g < group; ++g) std::fill(out + g * ldo, out + g * ldo + hs, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const float* vj = vpages[j / ps] + (j % ps) * ld;
    for (int64_t g = 0; g < group; ++g) {
      const float p = s[g * n + j];
      float* og = out + g * ldo;
#pragma omp simd
      for (int64_t d = 0; d < hs; ++d) og[d] += p * vj[d];
    }
  }
}

#if defined(__AVX512F__)

// r[j] = sum of the 16 lanes of a[j], j < 16.
inline __m512 reduce16(__m512 a[16]) {
  __m512 b[8], c[4];
  for (int i = 0; i < 8; ++i) {
    const __m512 x = _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x44);  // [a.q0 a.q1 a'.q0 a'.q1]
    const __m512 y = _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xEE);  // [a.q2 a.q3 a'.q2 a'.q3]
    b[i] = _mm512_add_ps(x, y);  // lanes 0-7: partials of a[2i], 8-15: of a[2i+1]
  }
  for (int i = 0; i < 4; ++i) {
    const __m512 x = _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88);
    const __m512 y = _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xDD);
    c[i] = _mm512_add_ps(x, y);  // 128-bit quarter k: 4 partials of a[4i + k]
  }
  const __m512 d0 = _mm512_add_ps(_mm512_unpacklo_ps(c[0], c[1]), _mm512_unpackhi_ps(c[0], c[1]));
  const __m512 d1 = _mm512_add_ps(_mm512_unpacklo_ps(c[2], c[3]), _mm512_unpackhi_ps(c[2], c[3]));
  const __m512d e0 = _mm512_unpacklo_pd(_mm512_castps_pd(d0), _mm512_castps_pd(d1));
  const __m512d e1 = _mm512_unpackhi_pd(_mm512_castps_pd(d0), _mm512_castps_pd(d1));
  const __m512 e = _mm512_add_ps(_mm512_castpd_ps(e0), _mm512_castpd_ps(e1));  // lane 4k+m: a[4m+k]
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(idx, e);
}

template <int HV>
void attend_avx512(float* out, int64_t ldo, const float* q, int64_t ldq, int64_t group, int64_t n,
                   float scale, const float* const* kpages, const float* const* vpages, int64_t ps,
                   int64_t ld, float* s) {
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t g = 0; g < group; ++g) {
    __m512 qv[HV];
    for (int h = 0; h < HV; ++h) qv[h] = _mm512_loadu_ps(q + g * ldq + 16 * h);
    float* sg = s + g * n;
    for (int64_t j0 = 0; j0 < n; j0 += ps) {
      const float* kp = kpages[j0 / ps];
      const int64_t cnt = std::min(ps, n - j0);
      for (int64_t b0 = 0; b0 < cnt; b0 += 16) {
        const int64_t m = std::min<int64_t>(16, cnt - b0);
        __m512 a[16];
        for (int64_t jj = 0; jj < 16; ++jj) {
          if (jj < m) {
            const float* kj = kp + (b0 + jj) * ld;
            __m512 acc = _mm512_mul_ps(qv[0], _mm512_loadu_ps(kj));
            for (int h = 1; h < HV; ++h) acc = _mm512_fmadd_ps(qv[h], _mm512_loadu_ps(kj + 16 * h), acc);
            a[jj] = acc;
          } else {
            a[jj] = _mm512_setzero_ps();
          }
        }
        const __m512 r = _mm512_mul_ps(reduce16(a), vscale);
        _mm512_mask_storeu_ps(sg + j0 + b0, static_cast<__mmask16>((1u << m) - 1u), r);
      }
    }
  }
  softmax_rows(s, group, n);
  for (int64_t g = 0; g < group; ++g) {
    __m512 o[HV];
    for (int h = 0; h < HV; ++h) o[h] = _mm512_setzero_ps();
    const float* sg = s + g * n;
    for (int64_t j0 = 0; j0 < n; j0 += ps) {
      const float* vp = vpages[j0 / ps];
      const int64_t cnt = std::min(ps, n - j0);
      for (int64_t jj = 0; jj < cnt; ++jj) {
        const __m512 p = _mm512_set1_ps(sg[j0 + jj]);
        const float* vj = vp + jj * ld;
        for (int h = 0; h < HV; ++h) o[h] = _mm512_fmadd_ps(p, _mm512_loadu_ps(vj + 16 * h), o[h]);
      }
    }
    for (int h = 0; h < HV; ++h) _mm512_storeu_ps(out + g * ldo + 16 * h, o[h]);
  }
}

#endif

}  // namespace

void paged_attention(float* out, int64_t ldo, const float* q, int64_t ldq, int64_t group, int64_t hs,
                     int64_t n, float scale, const float* const* kpages, const float* const* vpages,
                     int64_t page_size, int64_t ld, float* s) {
#if defined(__AVX512F__)
  switch (hs) {
    case 32: return attend_avx512<2>(out, ldo, q, ldq, group, n, scale, kpages, vpages, page_size, ld, s);
    case 64: return attend_avx512<4>(out, ldo, q, ldq, group, n, scale, kpages, vpages, page_size, ld, s);
    case 128: return attend_avx512<8>(out, ldo, q, ldq, group, n, scale, kpages, vpages, page_size, ld, s);
    default: break;
  }
#endif
  attend_generic(out, ldo, q, ldq, group, hs, n, scale, kpages, vpages, page_size, ld, s);
}

void paged_attention_ref(float* out, int64_t ldo, const float* q, int64_t ldq, int64_t group, int64_t hs,
                         int64_t n, float scale, const float* const* kpages, const float* const* vpages,
                         int64_t page_size, int64_t ld) {
  std::vector<double> sc(static_cast<size_t>(n));
  for (int64_t g = 0; g < group; ++g) {
    double mx = -1e300;
    for (int64_t j = 0; j < n; ++j) {
      const float* kj = kpages[j / page_size] + (j % page_size) * ld;
      double acc = 0;
      for (int64_t d = 0; d < hs; ++d) acc += static_cast<double>(q[g * ldq + d]) * kj[d];
      sc[static_cast<size_t>(j)] = acc * scale;
      mx = std::max(mx, sc[static_cast<size_t>(j)]);
    }
    double sum = 0;
    for (auto& v : sc) sum += (v = std::exp(v - mx));
    for (int64_t d = 0; d < hs; ++d) {
      double acc = 0;
      for (int64_t j = 0; j < n; ++j)
        acc += sc[static_cast<size_t>(j)] * vpages[j / page_size][(j % page_size) * ld + d];
      out[g * ldo + d] = static_cast<float>(acc / sum);
    }
  }
}

}  // namespace trinity::tensor
