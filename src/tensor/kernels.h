// CPU kernels of the transformer, as forward/backward pairs (llm.c style): outputs first, shapes in
// comments, N = packed rows (sum of sequence lengths), C channels, HS head size, I MLP width.
// Every backward ACCUMULATES (+=) into all of its gradient outputs; callers zero them.
// Exceptions: rope_forward / rope_backward rotate in place.
// kernels_ref.cpp keeps a naive double-precision reference of each kernel (the test oracle).
#pragma once

#include <cstdint>

namespace trinity::tensor {

// out[n, :] = wte[ids[n], :]
void embedding_forward(float* out /*[N,C]*/, const int32_t* ids /*[N]*/, const float* wte /*[V,C]*/,
                       int64_t n, int64_t c);
// dwte[ids[n], :] += dout[n, :]
void embedding_backward(float* dwte /*[V,C]*/, const float* dout /*[N,C]*/, const int32_t* ids,
                        int64_t n, int64_t c);

// RMSNorm (HF Qwen2/Llama): out = w * (in * rstd), rstd = 1 / sqrt(mean(in^2) + eps).
void rmsnorm_forward(float* out /*[N,C]*/, float* rstd /*[N]*/, const float* in /*[N,C]*/,
                     const float* w /*[C]*/, int64_t n, int64_t c, float eps);
// dw may be null (a frozen norm weight).
void rmsnorm_backward(float* din /*[N,C]*/, float* dw /*[C] or null*/, const float* dout /*[N,C]*/,
                      const float* in /*[N,C]*/, const float* w /*[C]*/, const float* rstd /*[N]*/, int64_t n,
                      int64_t c);

// Rotary embedding, HF "rotate_half" layout: for each head, x[:HS/2] and x[HS/2:] are the pairs.
// cos/sin tables are [P, HS/2] (P >= max position + 1); pos[n] is the position of row n.
// x[n, h, i], x[n, h, i + HS/2] <- (x1 cos - x2 sin, x2 cos + x1 sin)
void rope_forward(float* x /*[N,H,HS]*/, const int32_t* pos /*[N]*/, const float* cos_t,
                  const float* sin_t, int64_t n, int64_t h, int64_t hs);
// Applies the transpose (inverse) rotation to gradients in place.
void rope_backward(float* dx /*[N,H,HS]*/, const int32_t* pos, const float* cos_t,
                   const float* sin_t, int64_t n, int64_t h, int64_t hs);

// SwiGLU: out = silu(gate) * up, silu(g) = g * sigmoid(g).
void swiglu_forward(float* out /*[N,I]*/, const float* gate /*[N,I]*/, const float* up /*[N,I]*/,
                    int64_t n_elems);
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, int64_t n_elems);

// y[n, :] = x[n, :] W^T + b  (W [OC, IC]; b may be null). One GEMM over all N rows.
void linear_forward(float* y /*[N,OC]*/, const float* x /*[N,IC]*/, const float* w /*[OC,IC]*/,
                    const float* b /*[OC] or null*/, int64_t n, int64_t ic, int64_t oc);
// y[n, :] += x[n, :] W^T (the residual projections: attention out and MLP down).
void linear_accumulate(float* y /*[N,OC]*/, const float* x /*[N,IC]*/, const float* w /*[OC,IC]*/,
                       int64_t n, int64_t ic, int64_t oc);
// dx += dy W; dw += dy^T x; db += colsum(dy). dx / dw / db may be null (skipped: a frozen weight).
void linear_backward(float* dx /*[N,IC]*/, float* dw /*[OC,IC]*/, float* db /*[OC] or null*/,
                     const float* dy /*[N,OC]*/, const float* x /*[N,IC]*/, const float* w,
                     int64_t n, int64_t ic, int64_t oc);

// out = a + b, elementwise (out may alias a).
void add(float* out, const float* a, const float* b, int64_t n);

// --- naive double-precision references (test oracles) ---
void embedding_forward_ref(float* out, const int32_t* ids, const float* wte, int64_t n, int64_t c);
void embedding_backward_ref(float* dwte, const float* dout, const int32_t* ids, int64_t n, int64_t c);
void rmsnorm_forward_ref(float* out, float* rstd, const float* in, const float* w, int64_t n,
                         int64_t c, float eps);
void rmsnorm_backward_ref(float* din, float* dw, const float* dout, const float* in,
                          const float* w, const float* rstd, int64_t n, int64_t c);
void rope_forward_ref(float* x, const int32_t* pos, const float* cos_t, const float* sin_t,
                      int64_t n, int64_t h, int64_t hs);
void rope_backward_ref(float* dx, const int32_t* pos, const float* cos_t, const float* sin_t, int64_t n, int64_t h,
                       int64_t hs);
void swiglu_forward_ref(float* out, const float* gate, const float* up, int64_t n_elems);
void swiglu_backward_ref(float* dgate, float* dup, const float* dout, const float* gate,
                         const float* up, int64_t n_elems);
void linear_forward_ref(float* y, const float* x, const float* w, const float* b, int64_t n,
                        int64_t ic, int64_t oc);
void linear_backward_ref(float* dx, float* dw, float* db, const float* dy, const float* x,
                         const float* w, int64_t n, int64_t ic, int64_t oc);

}  // namespace trinity::tensor
