// Causal GQA attention kernels (see attention.h). Each (sequence, head, block of 64 query rows) is
// two (forward) or five (backward) GEMMs against the keys up to the block's last row, with the
// causal softmax and its backward done row-parallel in between; only the diagonal block computes
// scores it then masks. A sequence with a shared prefix puts the prefix's keys first in each block
// of scores (two GEMMs each way, one per key range). Scratch is O(64 * T), reused across heads.
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

// The rows a sequence attends to before its own: its prefix sequence's (see attention.h).
struct Prefix {
  int64_t base = 0, len = 0;
};

Prefix prefix_of(const int64_t* seq_start, const int64_t* prefix, int64_t bi) {
  if (!prefix || prefix[bi] < 0) return {};
  const int64_t p = prefix[bi];
  return {seq_start[p], seq_start[p + 1] - seq_start[p]};
}

// Scratch for one block of scores: [min(t, kRowBlock), prefix + t] for the largest sequence.
size_t block_scratch(const int64_t* seq_start, const int64_t* prefix, int64_t b) {
  int64_t most = 0;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t t = seq_start[i + 1] - seq_start[i];
    most = std::max(most, std::min(t, kRowBlock) * (prefix_of(seq_start, prefix, i).len + t));
  }
  return static_cast<size_t>(most);
}

}  // namespace

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, const int64_t* seq_start,
                       int64_t b, AttnShape sh, const int64_t* prefix) {
  const int64_t hs = sh.hs, nh = sh.nh, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = sh.nkv * hs;
  const int iq = static_cast<int>(ldq), ik = static_cast<int>(ldk), ihs = static_cast<int>(hs);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  std::vector<float> s(block_scratch(seq_start, prefix, b));
  for (int64_t bi = 0; bi < b; ++bi) {
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    const Prefix pre = prefix_of(seq_start, prefix, bi);
    const int64_t tp = pre.len;
    const int itp = static_cast<int>(tp);
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i0 = 0; i0 < t; i0 += kRowBlock) {
        const int64_t i1 = std::min(t, i0 + kRowBlock), rows = i1 - i0, cols = tp + i1;
        const int ir = static_cast<int>(rows), ld = static_cast<int>(cols);  // s is [rows, tp + i1]
        const float* qb = q + (base + i0) * ldq + h * hs;
        float* ob = out + (base + i0) * ldq + h * hs;
        if (tp > 0)
          gemm(false, true, ir, itp, ihs, scale, qb, iq, k + pre.base * ldk + kvh * hs, ik, 0.0f, s.data(), ld);
        gemm(false, true, ir, static_cast<int>(i1), ihs, scale, qb, iq, k + base * ldk + kvh * hs, ik, 0.0f,
             s.data() + tp, ld);
        parallel_for(
            rows,
            [&](int64_t r) {
              const int64_t n = tp + i0 + r + 1;  // keys this row sees: the prefix, then its own 0..i
              float* row = s.data() + r * cols;
              float m = -std::numeric_limits<float>::infinity();
              for (int64_t j = 0; j < n; ++j) m = std::max(m, row[j]);
              const float sum = static_cast<float>(exp_shifted(row, row, m, n));
              const float inv = 1.0f / sum;
              for (int64_t j = 0; j < n; ++j) row[j] *= inv;
              std::fill(row + n, row + cols, 0.0f);
              lse[(base + i0 + r) * nh + h] = m + std::log(sum);
            },
            8 * cols);
        if (tp > 0)
          gemm(false, false, ir, ihs, itp, 1.0f, s.data(), ld, v + pre.base * ldk + kvh * hs, ik, 0.0f, ob, iq);
        gemm(false, false, ir, ihs, static_cast<int>(i1), 1.0f, s.data() + tp, ld, v + base * ldk + kvh * hs, ik,
             tp > 0 ? 1.0f : 0.0f, ob, iq);
      }
    }
  }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                        const float* v, const float* out, const float* lse, const int64_t* seq_start, int64_t b,
                        AttnShape sh, const int64_t* prefix) {
  const int64_t hs = sh.hs, nh = sh.nh, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = sh.nkv * hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const size_t blk = block_scratch(seq_start, prefix, b);
  std::vector<float> p(blk), dp(blk);
  const int iq = static_cast<int>(ldq), ik = static_cast<int>(ldk), ihs = static_cast<int>(hs);
  for (int64_t bi = 0; bi < b; ++bi) {
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    const Prefix pre = prefix_of(seq_start, prefix, bi);
    const int64_t tp = pre.len;
    const int itp = static_cast<int>(tp);
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / group;
      const float* kh = k + base * ldk + kvh * hs;
      const float* vh = v + base * ldk + kvh * hs;
      float* dkh = dk + base * ldk + kvh * hs;
      float* dvh = dv + base * ldk + kvh * hs;
      const float* kp = k + pre.base * ldk + kvh * hs;
      const float* vp = v + pre.base * ldk + kvh * hs;
      float* dkp = dk + pre.base * ldk + kvh * hs;
      float* dvp = dv + pre.base * ldk + kvh * hs;
      for (int64_t i0 = 0; i0 < t; i0 += kRowBlock) {
        const int64_t i1 = std::min(t, i0 + kRowBlock), rows = i1 - i0, cols = tp + i1;
        const int ld = static_cast<int>(cols), ir = static_cast<int>(rows), ii1 = static_cast<int>(i1);
        const float* qb = q + (base + i0) * ldq + h * hs;
        const float* dob = dout + (base + i0) * ldq + h * hs;
        float* dqb = dq + (base + i0) * ldq + h * hs;
        float *ps = p.data() + tp, *dps = dp.data() + tp;  // the own keys' columns
        if (tp > 0) {
          gemm(false, true, ir, itp, ihs, scale, qb, iq, kp, ik, 0.0f, p.data(), ld);
          gemm(false, true, ir, itp, ihs, 1.0f, dob, iq, vp, ik, 0.0f, dp.data(), ld);
        }
        gemm(false, true, ir, ii1, ihs, scale, qb, iq, kh, ik, 0.0f, ps, ld);
        gemm(false, true, ir, ii1, ihs, 1.0f, dob, iq, vh, ik, 0.0f, dps, ld);  // dP = dO V^T
        parallel_for(
            rows,
            [&](int64_t r) {
              const int64_t i = i0 + r, n = tp + i + 1;
              float* pr = p.data() + r * cols;
              float* dr = dp.data() + r * cols;
              const float l = lse[(base + i) * nh + h];
              const float* oi = out + (base + i) * ldq + h * hs;
              const float* doi = dob + r * ldq;
              float dsum = 0.0f;  // D_i = dO_i . O_i = sum_j P_ij dP_ij
              for (int64_t d = 0; d < hs; ++d) dsum += doi[d] * oi[d];
              exp_shifted(pr, pr, l, n);
              for (int64_t j = 0; j < n; ++j) dr[j] = pr[j] * (dr[j] - dsum) * scale;  // dS
              std::fill(pr + n, pr + cols, 0.0f);
              std::fill(dr + n, dr + cols, 0.0f);
            },
            8 * cols);
        // dQ_blk += dS K ; dK[0:i1] += dS^T Q_blk ; dV[0:i1] += P^T dO_blk (prefix columns likewise)
        if (tp > 0) {
          gemm(false, false, ir, ihs, itp, 1.0f, dp.data(), ld, kp, ik, 1.0f, dqb, iq);
          gemm(true, false, itp, ihs, ir, 1.0f, dp.data(), ld, qb, iq, 1.0f, dkp, ik);
          gemm(true, false, itp, ihs, ir, 1.0f, p.data(), ld, dob, iq, 1.0f, dvp, ik);
        }
        gemm(false, false, ir, ihs, ii1, 1.0f, dps, ld, kh, ik, 1.0f, dqb, iq);
        gemm(true, false, ii1, ihs, ir, 1.0f, dps, ld, qb, iq, 1.0f, dkh, ik);
        gemm(true, false, ii1, ihs, ir, 1.0f, ps, ld, dob, iq, 1.0f, dvh, ik);
      }
    }
  }
}

namespace {

// The key rows query row i (0-based in sequence bi) attends to, in order: the prefix's, then its own.
std::vector<int64_t> key_rows(const int64_t* seq_start, const int64_t* prefix, int64_t bi, int64_t i) {
  std::vector<int64_t> keys;
  const Prefix pre = prefix_of(seq_start, prefix, bi);
  for (int64_t j = 0; j < pre.len; ++j) keys.push_back(pre.base + j);
  for (int64_t j = 0; j <= i; ++j) keys.push_back(seq_start[bi] + j);
  return keys;
}

}  // namespace

void attention_forward_ref(float* out, float* lse, const float* q, const float* k, const float* v,
                           const int64_t* seq_start, int64_t b, AttnShape sh, const int64_t* prefix) {
  const int64_t hs = sh.hs, nh = sh.nh, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = sh.nkv * hs;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  for (int64_t bi = 0; bi < b; ++bi) {
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = 0; i < t; ++i) {
        const auto keys = key_rows(seq_start, prefix, bi, i);
        std::vector<double> s(keys.size());
        double m = -1e300;
        for (size_t j = 0; j < keys.size(); ++j) {
          double acc = 0;
          for (int64_t d = 0; d < hs; ++d)
            acc += static_cast<double>(q[(base + i) * ldq + h * hs + d]) * k[keys[j] * ldk + kvh * hs + d];
          s[j] = acc * scale;
          m = std::max(m, acc * scale);
        }
        double sum = 0;
        for (auto& x : s) sum += std::exp(x - m);
        for (int64_t d = 0; d < hs; ++d) {
          double o = 0;
          for (size_t j = 0; j < keys.size(); ++j) o += std::exp(s[j] - m) / sum * v[keys[j] * ldk + kvh * hs + d];
          out[(base + i) * ldq + h * hs + d] = static_cast<float>(o);
        }
        lse[(base + i) * nh + h] = static_cast<float>(m + std::log(sum));
      }
    }
  }
}

void attention_backward_ref(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                            const float* v, const int64_t* seq_start, int64_t b, AttnShape sh, const int64_t* prefix) {
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
        const auto keys = key_rows(seq_start, prefix, bi, i);
        std::vector<double> p(keys.size()), dp(keys.size());
        double m = -1e300;
        for (size_t j = 0; j < keys.size(); ++j) {
          double acc = 0;
          for (int64_t d = 0; d < hs; ++d) acc += static_cast<double>(qi[d]) * k[keys[j] * ldk + kvh * hs + d];
          p[j] = acc * scale;
          m = std::max(m, acc * scale);
        }
        double sum = 0;
        for (auto& x : p) sum += (x = std::exp(x - m));
        double pdp = 0;
        for (size_t j = 0; j < keys.size(); ++j) {
          p[j] /= sum;
          double acc = 0;
          for (int64_t d = 0; d < hs; ++d) acc += static_cast<double>(gi[d]) * v[keys[j] * ldk + kvh * hs + d];
          dp[j] = acc;
          pdp += p[j] * acc;
        }
        for (size_t j = 0; j < keys.size(); ++j) {
          const double pj = p[j], ds = pj * (dp[j] - pdp) * scale;
          const int64_t kj = keys[j] * ldk + kvh * hs;
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
