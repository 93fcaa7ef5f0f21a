// Causal GQA attention kernels (see attention.h). Each (sequence, head, block of 64 query rows) is
// two (forward) or five (backward) GEMMs against the keys up to the block's last row, with the
// causal softmax and its backward done row-parallel in between; only the diagonal block computes
// scores it then masks. Scratch is O(64 * T), reused across heads.
#include "tensor/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "tensor/blas.h"
#include "tensor/vmath.h"

namespace trinity::tensor {

namespace {

// Query rows are processed in blocks of kRowBlock: block [i0, i1) only needs keys [0, i1), so the
// GEMMs skip the upper triangle (about half the work for long sequences).
constexpr int64_t kRowBlock = 64;

int64_t max_len(const int64_t* seq_start, int64_t b) {
  int64_t tmax = 0;
  for (int64_t i = 0; i < b; ++i) tmax = std::max(tmax, seq_start[i + 1] - seq_start[i]);
  return tmax;
}

}  // namespace

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const int64_t* seq_start, int64_t b, AttnShape sh) {
  const int64_t hs = sh.hs, nh = sh.nh, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = sh.nkv * hs;
  const int iq = static_cast<int>(ldq), ik = static_cast<int>(ldk), ihs = static_cast<int>(hs);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int64_t tmax = max_len(seq_start, b);
  std::vector<float> s(static_cast<size_t>(std::min(tmax, kRowBlock) * tmax));
  for (int64_t bi = 0; bi < b; ++bi) {
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i0 = 0; i0 < t; i0 += kRowBlock) {
        const int64_t i1 = std::min(t, i0 + kRowBlock), rows = i1 - i0;
        const int ld = static_cast<int>(i1);  // s is [rows, i1]: keys 0..i1-1
        gemm(false, true, static_cast<int>(rows), ld, ihs, scale, q + (base + i0) * ldq + h * hs, iq,
             k + base * ldk + kvh * hs, ik, 0.0f, s.data(), ld);
        parallel_for(rows, [&](int64_t r) {
          const int64_t i = i0 + r;
          float* row = s.data() + r * i1;
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j <= i; ++j) m = std::max(m, row[j]);
          const float sum = static_cast<float>(exp_shifted(row, row, m, i + 1));
          const float inv = 1.0f / sum;
          for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
          std::fill(row + i + 1, row + i1, 0.0f);
          lse[(base + i) * nh + h] = m + std::log(sum);
        }, 8 * i1);
        gemm(false, false, static_cast<int>(rows), ihs, ld, 1.0f, s.data(), ld,
             v + base * ldk + kvh * hs, ik, 0.0f, out + (base + i0) * ldq + h * hs, iq);
      }
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
  const size_t blk = static_cast<size_t>(std::min(tmax, kRowBlock) * tmax);
  std::vector<float> p(blk), dp(blk);
  const int iq = static_cast<int>(ldq), ik = static_cast<int>(ldk), ihs = static_cast<int>(hs);
  for (int64_t bi = 0; bi < b; ++bi) {
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / group;
      const float* kh = k + base * ldk + kvh * hs;
      const float* vh = v + base * ldk + kvh * hs;
      float* dkh = dk + base * ldk + kvh * hs;
      float* dvh = dv + base * ldk + kvh * hs;
      for (int64_t i0 = 0; i0 < t; i0 += kRowBlock) {
        const int64_t i1 = std::min(t, i0 + kRowBlock), rows = i1 - i0;
        const int ld = static_cast<int>(i1), ir = static_cast<int>(rows);
        const float* qb = q + (base + i0) * ldq + h * hs;
        const float* dob = dout + (base + i0) * ldq + h * hs;
        gemm(false, true, ir, ld, ihs, scale, qb, iq, kh, ik, 0.0f, p.data(), ld);
        gemm(false, true, ir, ld, ihs, 1.0f, dob, iq, vh, ik, 0.0f, dp.data(), ld);  // dP = dO V^T
        parallel_for(rows, [&](int64_t r) {
          const int64_t i = i0 + r;
          float* pr = p.data() + r * i1;
          float* dr = dp.data() + r * i1;
          const float l = lse[(base + i) * nh + h];
          const float* oi = out + (base + i) * ldq + h * hs;
          const float* doi = dob + r * ldq;
          float dsum = 0.0f;  // D_i = dO_i . O_i = sum_j P_ij dP_ij
          for (int64_t d = 0; d < hs; ++d) dsum += doi[d] * oi[d];
          exp_shifted(pr, pr, l, i + 1);
          for (int64_t j = 0; j <= i; ++j) dr[j] = pr[j] * (dr[j] - dsum) * scale;  // dS
          std::fill(pr + i + 1, pr + i1, 0.0f);
          std::fill(dr + i + 1, dr + i1, 0.0f);
        }, 8 * i1);
        // dQ_blk += dS K ; dK[0:i1] += dS^T Q_blk ; dV[0:i1] += P^T dO_blk
        gemm(false, false, ir, ihs, ld, 1.0f, dp.data(), ld, kh, ik, 1.0f, dq + (base + i0) * ldq + h * hs, iq);
        gemm(true, false, ld, ihs, ir, 1.0f, dp.data(), ld, qb, iq, 1.0f, dkh, ik);
        gemm(true, false, ld, ihs, ir, 1.0f, p.data(), ld, dob, iq, 1.0f, dvh, ik);
      }
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

void attention_backward_ref(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                            const float* v, const int64_t* seq_start, int64_t b, AttnShape sh) {
  // Recomputes p = softmax(s) from q and k (no saved lse), then for query row i:
  //   dv_j += p_j dout_i;  dp_j = dout_i . v_j;  ds_j = p_j (dp_j - sum_l p_l dp_l);
  //   dq_i += scale ds_j k_j;  dk_j += scale ds_j q_i.
  const int64_t hs = sh.hs, nh = sh.nh, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = sh.nkv * hs;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  for (int64_t bi = 0; bi < b; ++bi) {
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = 0; i < t; ++i) {
        const float* qi = q + (base + i) * ldq + h * hs;
        const float* gi = dout + (base + i) * ldq + h * hs;
        std::vector<double> p(static_cast<size_t>(i + 1)), dp(static_cast<size_t>(i + 1));
        double m = -1e300;
        for (int64_t j = 0; j <= i; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < hs; ++d) acc += static_cast<double>(qi[d]) * k[(base + j) * ldk + kvh * hs + d];
          p[static_cast<size_t>(j)] = acc * scale;
          m = std::max(m, acc * scale);
        }
        double sum = 0;
        for (auto& x : p) sum += (x = std::exp(x - m));
        double pdp = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double& pj = p[static_cast<size_t>(j)];
          pj /= sum;
          double acc = 0;
          for (int64_t d = 0; d < hs; ++d) acc += static_cast<double>(gi[d]) * v[(base + j) * ldk + kvh * hs + d];
          dp[static_cast<size_t>(j)] = acc;
          pdp += pj * acc;
        }
        for (int64_t j = 0; j <= i; ++j) {
          const double pj = p[static_cast<size_t>(j)], ds = pj * (dp[static_cast<size_t>(j)] - pdp) * scale;
          const int64_t kj = (base + j) * ldk + kvh * hs;
          for (int64_t d = 0; d < hs; ++d) {
            dv[kj + d] += static_cast<float>(pj * gi[d]);
            dq[(base + i) * ldq + h * hs + d] += static_cast<float>(ds * k[kj + d]);
            dk[kj + d] += static_cast<float>(ds * qi[d]);
          }
        }
      }
    }
  }
}

}  // namespace trinity::tensor
