// Causal grouped-query attention over a packed batch of variable-length sequences.
// Rows of sequence b are seq_start[b] .. seq_start[b+1]-1; no row attends across sequences, except
// to a shared prefix: with `prefix` (optional, [B]), a sequence b with prefix[b] = p >= 0 continues
// sequence p (a prompt several sequences share, computed once): each of its rows attends to all of
// p's rows, then causally to its own. A prefix has no prefix itself. Query head h reads kv head
// h / (NH / NKV).
// Forward saves lse (log-sum-exp of each row's scores) so backward recomputes the probabilities
// instead of storing T x T per head: saved memory O(N * NH), scratch O(T^2) reused across heads.
#pragma once

#include <cstdint>

namespace trinity::tensor {

struct AttnShape {
  int64_t nh = 0;   // query heads NH
  int64_t nkv = 0;  // kv heads NKV
  int64_t hs = 0;   // head size HS
};

// out = softmax(q k^T / sqrt(HS) + causal) v, per sequence and head (keys: the prefix's, then its own).
void attention_forward(float* out /*[N, NH*HS]*/, float* lse /*[N, NH]*/, const float* q /*[N, NH*HS]*/,
                       const float* k /*[N, NKV*HS]*/, const float* v /*[N, NKV*HS]*/,
                       const int64_t* seq_start /*[B+1]*/, int64_t b, AttnShape s,
                       const int64_t* prefix = nullptr /*[B]*/);

// Accumulates dq, dk, dv (+=) given dout and the forward's q, k, v, out, lse.
void attention_backward(float* dq /*[N, NH*HS]*/, float* dk /*[N, NKV*HS]*/, float* dv /*[N, NKV*HS]*/,
                        const float* dout /*[N, NH*HS]*/, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, const int64_t* seq_start, int64_t b, AttnShape s,
                        const int64_t* prefix = nullptr);

// Naive double-precision references. The backward recomputes the probabilities from q and k and
// accumulates (+=) like the fast kernel.
void attention_forward_ref(float* out, float* lse, const float* q, const float* k, const float* v,
                           const int64_t* seq_start, int64_t b, AttnShape s, const int64_t* prefix = nullptr);
void attention_backward_ref(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                            const float* v, const int64_t* seq_start, int64_t b, AttnShape s,
                            const int64_t* prefix = nullptr);

}  // namespace trinity::tensor
