// Naive double-precision reference kernels: the oracles the fast kernels are tested against.
// Written for clarity, one loop per formula; never used on a hot path.
#include <cmath>
#include <vector>

#include "tensor/kernels.h"

namespace trinity::tensor {

void embedding_forward_ref(float* out, const int32_t* ids, const float* wte, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) out[i * c + j] = wte[static_cast<int64_t>(ids[i]) * c + j];
}

void embedding_backward_ref(float* dwte, const float* dout, const int32_t* ids, int64_t n, int64_t c) {
  // One double sum per table row over the rows that read it (repeated ids accumulate).
  std::vector<double> acc(static_cast<size_t>(c));
  std::vector<int32_t> seen;
  for (int64_t i = 0; i < n; ++i) {
    bool done = false;
    for (int32_t s : seen) done |= s == ids[i];
    if (done) continue;
    seen.push_back(ids[i]);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t r = i; r < n; ++r)
      if (ids[r] == ids[i])
        for (int64_t j = 0; j < c; ++j) acc[static_cast<size_t>(j)] += dout[r * c + j];
    for (int64_t j = 0; j < c; ++j)
      dwte[static_cast<int64_t>(ids[i]) * c + j] += static_cast<float>(acc[static_cast<size_t>(j)]);
  }
}

void rmsnorm_forward_ref(float* out, float* rstd, const float* in, const float* w, int64_t n,
                         int64_t c, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < c; ++j) ss += static_cast<double>(in[i * c + j]) * in[i * c + j];
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(c) + eps);
    rstd[i] = static_cast<float>(r);
    for (int64_t j = 0; j < c; ++j) out[i * c + j] = static_cast<float>(w[j] * (in[i * c + j] * r));
  }
}

void rmsnorm_backward_ref(float* din, float* dw, const float* dout, const float* in,
                          const float* w, const float* rstd, int64_t n, int64_t c) {
  // y_j = w_j x_j r, r = (mean(x^2) + eps)^-1/2, dr/dx_k = -r^3 x_k / C.
  std::vector<double> dwacc(static_cast<size_t>(c), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const double r = rstd[i];
    double dot = 0;
    for (int64_t j = 0; j < c; ++j)
      dot += static_cast<double>(dout[i * c + j]) * w[j] * in[i * c + j];
    for (int64_t k = 0; k < c; ++k) {
      const double x = in[i * c + k];
      din[i * c + k] += static_cast<float>(dout[i * c + k] * w[k] * r - dot * r * r * r * x / c);
      dwacc[static_cast<size_t>(k)] += static_cast<double>(dout[i * c + k]) * x * r;
    }
  }
  for (int64_t k = 0; k < c; ++k) dw[k] += static_cast<float>(dwacc[static_cast<size_t>(k)]);
}

void rope_forward_ref(float* x, const int32_t* pos, const float* cos_t, const float* sin_t,
                      int64_t n, int64_t h, int64_t hs) {
  const int64_t half = hs / 2;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t hh = 0; hh < h; ++hh) {
      float* v = x + (i * h + hh) * hs;
      for (int64_t j = 0; j < half; ++j) {
        const double c = cos_t[pos[i] * half + j], s = sin_t[pos[i] * half + j];
        const double x1 = v[j], x2 = v[j + half];
        v[j] = static_cast<float>(x1 * c - x2 * s);
        v[j + half] = static_cast<float>(x2 * c + x1 * s);
      }
    }
}

void rope_backward_ref(float* dx, const int32_t* pos, const float* cos_t, const float* sin_t, int64_t n, int64_t h,
                       int64_t hs) {
  // The forward is y = R x with R = [[c, -s], [s, c]] per pair; the gradient is dx = R^T dy.
  const int64_t half = hs / 2;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t hh = 0; hh < h; ++hh) {
      float* v = dx + (i * h + hh) * hs;
      for (int64_t j = 0; j < half; ++j) {
        const double c = cos_t[pos[i] * half + j], s = sin_t[pos[i] * half + j];
        const double g1 = v[j], g2 = v[j + half];
        v[j] = static_cast<float>(c * g1 + s * g2);
        v[j + half] = static_cast<float>(-s * g1 + c * g2);
      }
    }
}

void swiglu_forward_ref(float* out, const float* gate, const float* up, int64_t n_elems) {
  for (int64_t i = 0; i < n_elems; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void swiglu_backward_ref(float* dgate, float* dup, const float* dout, const float* gate,
                         const float* up, int64_t n_elems) {
  for (int64_t i = 0; i < n_elems; ++i) {
    const double g = gate[i], s = 1.0 / (1.0 + std::exp(-g));
    dup[i] += static_cast<float>(dout[i] * g * s);
    dgate[i] += static_cast<float>(dout[i] * up[i] * (s + g * s * (1.0 - s)));
  }
}

void linear_forward_ref(float* y, const float* x, const float* w, const float* b, int64_t n,
                        int64_t ic, int64_t oc) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < oc; ++o) {
      double s = b ? b[o] : 0.0;
      for (int64_t k = 0; k < ic; ++k) s += static_cast<double>(x[i * ic + k]) * w[o * ic + k];
      y[i * oc + o] = static_cast<float>(s);
    }
}

void linear_backward_ref(float* dx, float* dw, float* db, const float* dy, const float* x,
                         const float* w, int64_t n, int64_t ic, int64_t oc) {
  for (int64_t i = 0; i < n && dx; ++i)
    for (int64_t k = 0; k < ic; ++k) {
      double s = 0;
      for (int64_t o = 0; o < oc; ++o) s += static_cast<double>(dy[i * oc + o]) * w[o * ic + k];
      dx[i * ic + k] += static_cast<float>(s);
    }
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t k = 0; k < ic; ++k) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += static_cast<double>(dy[i * oc + o]) * x[i * ic + k];
      dw[o * ic + k] += static_cast<float>(s);
    }
    if (db) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += dy[i * oc + o];
      db[o] += static_cast<float>(s);
    }
  }
}

}  // namespace trinity::tensor
