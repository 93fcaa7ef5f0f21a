// Attention of one query row over keys/values stored in pages (the generation engine's paged KV
// cache), for the `group` query heads that share one kv head (GQA):
//   out[g] = sum_j softmax_j(q_g . k_j * scale) v_j,  j < n.
// Keys/values of page p start at kpages[p] / vpages[p], rows `ld` floats apart, `page_size` rows
// per page (the last page may be partial). With AVX-512 and hs a multiple of 16 up to 128, scores
// are computed 16 keys at a time (one transpose-reduction per 16 dot products instead of a
// horizontal sum per key) and outputs stay in registers across keys; otherwise a portable loop.
#pragma once

#include <cstdint>

namespace trinity::tensor {

// out: [group, hs] at row stride ldo; q: [group, hs] at stride ldq; s: scratch of group * n floats.
void paged_attention(float* out, int64_t ldo, const float* q, int64_t ldq, int64_t group, int64_t hs,
                     int64_t n, float scale, const float* const* kpages, const float* const* vpages,
                     int64_t page_size, int64_t ld, float* s);

// Plain reference over the same layout (double accumulation), for tests.
void paged_attention_ref(float* out, int64_t ldo, const float* q, int64_t ldq, int64_t group, int64_t hs,
                         int64_t n, float scale, const float* const* kpages, const float* const* vpages,
                         int64_t page_size, int64_t ld);

}  // namespace trinity::tensor
