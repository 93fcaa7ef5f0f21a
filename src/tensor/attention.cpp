// Causal GQA attention kernels (see attention.h). Work is split over (sequence, head) for the
// forward and over (sequence, kv head) for the backward, so dk/dv rows have a single writer.
// Inner loops are written as axpy over contiguous memory (k and v transposed into thread-local
// scratch) so they vectorise without reassociating float sums.
#include "tensor/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"

namespace trinity::tensor {

namespace {

// kt[d * t + j] = src[(base + j) * ld + d] for d < hs, j < t.
void transpose_head(float* kt, const float* src, int64_t base, int64_t t, int64_t ld, int64_t hs) {
  for (int64_t j = 0; j < t; ++j) {
    const float* r = src + (base + j) * ld;
    for (int64_t d = 0; d < hs; ++d) kt[d * t + j] = r[d];
  }
}

// s[0..n) = scale * sum_d qi[d] * kt[d * t + j]
void scores(float* s, const float* qi, const float* kt, int64_t n, int64_t t, int64_t hs,
            float scale) {
  std::fill(s, s + n, 0.0f);
  for (int64_t d = 0; d < hs; ++d) {
    const float a = qi[d] * scale;
    const float* kr = kt + d * t;
    for (int64_t j = 0; j < n; ++j) s[j] += a * kr[j];
  }
}

}  // namespace

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const int64_t* seq_start, int64_t b, AttnShape sh) {
  const int64_t hs = sh.hs, nh = sh.nh, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = sh.nkv * hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  int64_t tmax = 0;
  for (int64_t i = 0; i < b; ++i) tmax = std::max(tmax, seq_start[i + 1] - seq_start[i]);
  parallel_for_dynamic(b * nh, [&](int64_t item) {
    thread_local std::vector<float> kt, s;
    kt.resize(static_cast<size_t>(tmax * hs));
    s.resize(static_cast<size_t>(tmax));
    const int64_t bi = item / nh, h = item % nh, kvh = h / group;
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    transpose_head(kt.data(), k + kvh * hs, base, t, ldk, hs);
    for (int64_t i = 0; i < t; ++i) {
      const float* qi = q + (base + i) * ldq + h * hs;
      scores(s.data(), qi, kt.data(), i + 1, t, hs, scale);
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j <= i; ++j) m = std::max(m, s[static_cast<size_t>(j)]);
      float sum = 0.0f;
      for (int64_t j = 0; j <= i; ++j) {
        const float e = std::exp(s[static_cast<size_t>(j)] - m);
        s[static_cast<size_t>(j)] = e;
        sum += e;
      }
      const float inv = 1.0f / sum;
      float* o = out + (base + i) * ldq + h * hs;
      std::fill(o, o + hs, 0.0f);
      for (int64_t j = 0; j <= i; ++j) {
        const float p = s[static_cast<size_t>(j)] * inv;
        const float* vj = v + (base + j) * ldk + kvh * hs;
        for (int64_t d = 0; d < hs; ++d) o[d] += p * vj[d];
      }
      lse[(base + i) * nh + h] = m + std::log(sum);
    }
  });
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                        const float* k, const float* v, const float* out, const float* lse,
                        const int64_t* seq_start, int64_t b, AttnShape sh) {
  const int64_t hs = sh.hs, nh = sh.nh, nkv = sh.nkv, group = sh.nh / sh.nkv;
  const int64_t ldq = nh * hs, ldk = nkv * hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  int64_t tmax = 0;
  for (int64_t i = 0; i < b; ++i) tmax = std::max(tmax, seq_start[i + 1] - seq_start[i]);
  parallel_for_dynamic(b * nkv, [&](int64_t item) {
    thread_local std::vector<float> kt, vt, p, dp;
    kt.resize(static_cast<size_t>(tmax * hs));
    vt.resize(static_cast<size_t>(tmax * hs));
    p.resize(static_cast<size_t>(tmax));
    dp.resize(static_cast<size_t>(tmax));
    const int64_t bi = item / nkv, kvh = item % nkv;
    const int64_t base = seq_start[bi], t = seq_start[bi + 1] - base;
    transpose_head(kt.data(), k + kvh * hs, base, t, ldk, hs);
    transpose_head(vt.data(), v + kvh * hs, base, t, ldk, hs);
    for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
      for (int64_t i = 0; i < t; ++i) {
        const int64_t row = base + i;
        const float* qi = q + row * ldq + h * hs;
        const float* doi = dout + row * ldq + h * hs;
        const float* oi = out + row * ldq + h * hs;
        float* dqi = dq + row * ldq + h * hs;
        const float l = lse[row * nh + h];
        scores(p.data(), qi, kt.data(), i + 1, t, hs, scale);
        for (int64_t j = 0; j <= i; ++j) p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - l);
        // dp_j = dO_i . V_j ; D = dO_i . O_i
        scores(dp.data(), doi, vt.data(), i + 1, t, hs, 1.0f);
        float dsum = 0.0f;
        for (int64_t d = 0; d < hs; ++d) dsum += doi[d] * oi[d];
        for (int64_t j = 0; j <= i; ++j) {
          const float pj = p[static_cast<size_t>(j)];
          const float ds = pj * (dp[static_cast<size_t>(j)] - dsum) * scale;
          const float* kj = k + (base + j) * ldk + kvh * hs;
          float* dkj = dk + (base + j) * ldk + kvh * hs;
          float* dvj = dv + (base + j) * ldk + kvh * hs;
          for (int64_t d = 0; d < hs; ++d) {
            dqi[d] += ds * kj[d];
            dkj[d] += ds * qi[d];
            dvj[d] += pj * doi[d];
          }
        }
      }
    }
  });
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
