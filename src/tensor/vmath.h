// Vectorised float math for hot loops (softmax, SiLU) without -ffast-math: a Cephes-style expf on
// 16-lane GCC vectors. Max relative error ~2 ulp for x in [-87.3, 88.37]; below -87.3 returns 0,
// above 88.37 returns exp(88.37) (callers pass x - max <= 0, or -g in SiLU where it is irrelevant)
#pragma once

#include <cstdint>

namespace trinity::tensor {

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

inline v16f v16_load(const float* p) {
  v16f v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline void v16_store(float* p, v16f v) { __builtin_memcpy(p, &v, sizeof v); }
inline v16f v16_set(float x) { return v16f{} + x; }

inline v16f v16_exp(v16f x) {
  const v16f hi = v16_set(88.3762626647949f), lo = v16_set(-87.3365478515625f);
  const v16i under = x < lo;
  x = x > hi ? hi : x;
  x = x < lo ? lo : x;
  v16f t = x * 1.44269504088896341f + 0.5f;
  v16i ti = __builtin_convertvector(t, v16i);
  v16f tf = __builtin_convertvector(ti, v16f);
  const v16i adj = tf > t;  // floor for negatives
  ti += adj;                // adj is -1 where true
  tf = __builtin_convertvector(ti, v16f);
  x -= tf * 0.693359375f;
  x -= tf * -2.12194440e-4f;
  const v16f z = x * x;
  v16f y = v16_set(1.9875691500e-4f);
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * z + x + 1.0f;
  v16i bits = (ti + 127) << 23;
  v16f pow2;
  __builtin_memcpy(&pow2, &bits, sizeof pow2);
  y *= pow2;
  return under ? v16_set(0.0f) : y;
}

// out[i] = exp(in[i] - shift) for i < n (out may alias in); returns the sum in double.
double exp_shifted(float* out, const float* in, float shift, int64_t n);

}  // namespace trinity::tensor
