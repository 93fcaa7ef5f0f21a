// The RL head: per-row log-probability of a target token and entropy of the next-token
// distribution, for logits z = (h W^T) * inv_temp. Logits are computed in row chunks of at most
// ~64 MB and never materialised for the whole batch; backward recomputes them.
//   logprob = z_t - lse(z);  entropy H = lse(z) - sum_k p_k z_k
//   d logprob / d z_k = [k == t] - p_k;  d H / d z_k = -p_k (log p_k + H)
// Sums over the vocabulary are accumulated in double.
#pragma once

#include <cstdint>

namespace trinity::tensor {

struct HeadShape {
  int64_t m = 0;  // rows M
  int64_t c = 0;  // channels C
  int64_t v = 0;  // vocabulary V
  float inv_temp = 1.0f;
};

// target[r] in [0, V). Saves lse[r] for the backward. With `keep` ([M, V], optional) the logits
// are kept there for lm_head_backward, which then skips recomputing them (one GEMM less).
void lm_head_forward(float* logprob /*[M]*/, float* entropy /*[M]*/, float* lse /*[M]*/,
                     const float* h /*[M,C]*/, const float* w /*[V,C]*/,
                     const int32_t* target /*[M]*/, HeadShape s, float* keep = nullptr);

// Accumulates dh (+=) and dw (+=) from d(loss)/d(logprob) and d(loss)/d(entropy) per row.
// dw may be null (frozen head).
// `kept`: the forward's `keep` buffer (overwritten with d loss / d logits), or null to recompute.
void lm_head_backward(float* dh /*[M,C]*/, float* dw /*[V,C]*/, const float* dlogprob /*[M]*/,
                      const float* dentropy /*[M]*/, const float* h, const float* w,
                      const int32_t* target, const float* lse, const float* entropy, HeadShape s,
                      float* kept = nullptr);

// References: full logits in double. The backward accumulates (+=) as the fast one; dw may be null.
void lm_head_forward_ref(float* logprob, float* entropy, const float* h, const float* w,
                         const int32_t* target, HeadShape s);
void lm_head_backward_ref(float* dh, float* dw, const float* dlogprob, const float* dentropy, const float* h,
                          const float* w, const int32_t* target, HeadShape s);

}  // namespace trinity::tensor
