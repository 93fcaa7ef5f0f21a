// Causal GQA attention kernels (see attention.h). Each (sequence, head) is three or five GEMMs on a
// T x T score matrix in scratch memory (BLAS threads inside each GEMM), with the causal softmax
// and its backward done row-parallel in between. The upper triangle is computed and discarded:
// cheaper than a masked kernel at these sizes. Scratch is O(T^2) per call, reused across heads.
#include "tensor/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "tensor/blas.h"

namespace trinity::tensor {

namespace {

int64_t max_len(const int64_t* seq_start, int64_t b) {
  int64_t tmax = 0;
  for (int64_t i = 0; i < b; ++i) tmax = std::max(tmax, seq_start[i + 1] - seq_start[i]);
  return tmax;
}

// s[T, T] = scale * q_h k_h^T for one sequence and head.
void score_matrix(float* s, const float* q, const float* k, int64_t t, int64_t ldq, int64_t ldk,
                  int64_t hs, float scale) {
  gemm(false, true, static_cast<int>(t), static_cast<int>(t), static_cast<int>(hs), scale, q,
       static_cast<int>(ldq), k, static_cast<int>(ldk), 0.0f, s, static_cast<int>(t));
}

}  // namespace

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const int64_t* seq_start, int64_t b, AttnShape sh) {
  const int64_t hs = sh.hs, nh = sh.nh, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = sh.nkv * hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int64_t tmax = max_len(seq_start, b);
  std::vector<float> s(static_cast<size_t>(tmax * tmax));
  for (int64_t bi = 0; bi < b; ++bi) {
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / group;
      score_matrix(s.data(), q + base * ldq + h * hs, k + base * ldk + kvh * hs, t, ldq, ldk, hs,
                   scale);
      parallel_for(t, [&](int64_t i) {
        float* row = s.data() + i * t;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j <= i; ++j) m = std::max(m, row[j]);
        float sum = 0.0f;
        for (int64_t j = 0; j <= i; ++j) {
          row[j] = std::exp(row[j] - m);
          sum += row[j];
        }
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
        std::fill(row + i + 1, row + t, 0.0f);
        lse[(base + i) * nh + h] = m + std::log(sum);
      });
      gemm(false, false, static_cast<int>(t), static_cast<int>(hs), static_cast<int>(t), 1.0f,
           s.data(), static_cast<int>(t), v + base * ldk + kvh * hs, static_cast<int>(ldk), 0.0f,
           out + base * ldq + h * hs, static_cast<int>(ldq));
    }
  }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                        const float* k, const float* v, const float* out, const float* lse,
                        const int64_t* seq_start, int64_t b, AttnShape sh) {
  const int64_t hs = sh.hs, nh = sh.nh, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = sh.nkv * hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int64_t tmax = max_len(seq_start, b);
  std::vector<float> p(static_cast<size_t>(tmax * tmax)), dp(p.size());
  const int it = static_cast<int>(ldq), ik = static_cast<int>(ldk), ihs = static_cast<int>(hs);
  for (int64_t bi = 0; bi < b; ++bi) {
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    const int tt = static_cast<int>(t);
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / group;
      const float* qh = q + base * ldq + h * hs;
      const float* kh = k + base * ldk + kvh * hs;
      const float* vh = v + base * ldk + kvh * hs;
      const float* doh = dout + base * ldq + h * hs;
      score_matrix(p.data(), qh, kh, t, ldq, ldk, hs, scale);
      // dP = dO V^T
      gemm(false, true, tt, tt, ihs, 1.0f, doh, it, vh, ik, 0.0f, dp.data(), tt);
      parallel_for(t, [&](int64_t i) {
        float* pr = p.data() + i * t;
        float* dr = dp.data() + i * t;
        const float l = lse[(base + i) * nh + h];
        const float* oi = out + (base + i) * ldq + h * hs;
        const float* doi = doh + i * ldq;
        float dsum = 0.0f;  // D_i = dO_i . O_i = sum_j P_ij dP_ij
        for (int64_t d = 0; d < hs; ++d) dsum += doi[d] * oi[d];
        for (int64_t j = 0; j <= i; ++j) {
          pr[j] = std::exp(pr[j] - l);
          dr[j] = pr[j] * (dr[j] - dsum) * scale;  // dS (scaled for q k^T)
        }
        std::fill(pr + i + 1, pr + t, 0.0f);
        std::fill(dr + i + 1, dr + t, 0.0f);
      });
      // dQ_h += dS K ; dK += dS^T Q_h ; dV += P^T dO_h
      gemm(false, false, tt, ihs, tt, 1.0f, dp.data(), tt, kh, ik, 1.0f, dq + base * ldq + h * hs, it);
      gemm(true, false, tt, ihs, tt, 1.0f, dp.data(), tt, qh, it, 1.0f, dk + base * ldk + kvh * hs, ik);
      gemm(true, false, tt, ihs, tt, 1.0f, p.data(), tt, doh, it, 1.0f, dv + base * ldk + kvh * hs, ik);
    }
  }
}

void attention_forward_ref(float* out, float* lse, const float* q, const float* k, const float* v,
                           const int64_t* seq_start, int64_t b, AttnShape sh) {
  const int64_t hs = sh.hs, nh = sh.nh, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = sh.nkv * hs;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  for (int64_t bi = 0; bi < b; ++bi) {
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = 0; i < t; ++i) {
        std::vector<double> s(static_cast<size_t>(i + 1));
        double m = -1e300;
        for (int64_t j = 0; j <= i; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < hs; ++d)
            acc += static_cast<double>(q[(base + i) * ldq + h * hs + d]) *
                   k[(base + j) * ldk + kvh * hs + d];
          s[static_cast<size_t>(j)] = acc * scale;
          m = std::max(m, acc * scale);
        }
        double sum = 0;
        for (auto& x : s) sum += std::exp(x - m);
        for (int64_t d = 0; d < hs; ++d) {
          double o = 0;
          for (int64_t j = 0; j <= i; ++j)
            o += std::exp(s[static_cast<size_t>(j)] - m) / sum * v[(base + j) * ldk + kvh * hs + d];
          out[(base + i) * ldq + h * hs + d] = static_cast<float>(o);
        }
        lse[(base + i) * nh + h] = static_cast<float>(m + std::log(sum));
      }
    }
  }
}

}  // namespace trinity::tensor
