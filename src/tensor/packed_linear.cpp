// Panel-packed inference linear layers (see packed_linear.h). The register tile is MR rows x 32
// outputs (2*MR zmm accumulators, MR <= 12); for MR <= 2 the k loop is split over 2-4 independent
// accumulator sets so the FMA latency chain does not bound a memory-bound GEMV. Without AVX-512 a
// portable scalar loop over the same layout is used.
#include "tensor/packed_linear.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
// GCC 12's AVX-512 headers pass _mm512_undefined_* as a merge source: -Wmaybe-uninitialized noise.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "core/error.h"
#include "core/parallel.h"
#include "tensor/tensor.h"

namespace trinity::tensor {

namespace {

constexpr int64_t P = PackedLinear::kPanel;

size_t elem_size(PackDType d) { return d == PackDType::kF32 ? 4 : 2; }

}  // namespace

PackedLinear::PackedLinear(const float* w, int64_t oc, int64_t ic, PackDType dtype)
    : PackedLinear(std::vector<Part>{{w, oc}}, ic, dtype) {}

PackedLinear::PackedLinear(const std::vector<Part>& parts, int64_t ic, PackDType dtype) : ic_(ic), dtype_(dtype) {
  TRINITY_ASSERT(!parts.empty() && ic > 0, "PackedLinear: empty weight");
  std::vector<int64_t> owner;  // part of each panel
  for (size_t i = 0; i < parts.size(); ++i) {
    TRINITY_ASSERT(parts[i].oc > 0 && parts[i].w, "PackedLinear: empty part");
    part_oc_.push_back(parts[i].oc);
    part_panel_.push_back(panels_);
    oc_ += parts[i].oc;
    const int64_t np = (parts[i].oc + P - 1) / P;
    owner.insert(owner.end(), static_cast<size_t>(np), static_cast<int64_t>(i));
    panels_ += np;
  }
  const size_t bytes = (static_cast<size_t>(panels_ * P * ic) * elem_size(dtype) + 63) / 64 * 64;
  void* mem = std::aligned_alloc(64, bytes);
  if (!mem) throw Error("tensor", strcat("PackedLinear: cannot allocate ", bytes, " bytes"));
  data_ = std::shared_ptr<void>(mem, std::free);
  parallel_for(panels_, [&](int64_t p) {
    const auto pi = static_cast<size_t>(owner[static_cast<size_t>(p)]);
    const float* wp = parts[pi].w;
    const int64_t poc = parts[pi].oc, lp = p - part_panel_[pi];
    for (int64_t k = 0; k < ic; ++k)
      for (int64_t j = 0; j < P; ++j) {
        const int64_t o = lp * P + j;
        const float v = o < poc ? wp[o * ic + k] : 0.0f;
        const size_t at = static_cast<size_t>((p * ic + k) * P + j);
        if (dtype == PackDType::kF32)
          static_cast<float*>(mem)[at] = v;
        else
          static_cast<uint16_t*>(mem)[at] = f32_to_bf16(v);
      }
  }, ic * P);
}

size_t PackedLinear::bytes() const { return static_cast<size_t>(panels_ * P * ic_) * elem_size(dtype_); }

const void* PackedLinear::panel(int64_t p) const {
  return static_cast<const char*>(data_.get()) + static_cast<size_t>(p * ic_ * P) * elem_size(dtype_);
}

namespace {

// Stores a finished 32-wide output row: the first `cols` of v (bias added, accumulated or not).
inline void store_row(float* y, const float* v, int64_t cols, const float* b, bool acc) {
  for (int64_t j = 0; j < cols; ++j) {
    const float a = v[j] + (b ? b[j] : 0.0f);
    y[j] = acc ? y[j] + a : a;
  }
}

#if defined(__AVX512F__)

template <bool BF>
inline void load_w(const void* panel, int64_t k, __m512& w0, __m512& w1) {
  if constexpr (BF) {
    const auto* p = static_cast<const uint16_t*>(panel) + k * P;
    const __m256i r0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i r1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
    w0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(r0), 16));
    w1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(r1), 16));
  } else {
    const float* p = static_cast<const float*>(panel) + k * P;
    w0 = _mm512_loadu_ps(p);
    w1 = _mm512_loadu_ps(p + 16);
  }
}

constexpr int64_t kPrefetchK = 32;    // k steps ahead into L1 (4 KiB of fp32 panel)
constexpr int64_t kPrefetchL2K = 256;  // k steps ahead into L2 (32 KiB of fp32 panel)

// y[MR rows, cols] (+)= x[MR rows, :IC] . panel. KU independent accumulator sets over k.
template <int MR, bool BF>
void tile(float* y, int64_t ldy, const float* x, int64_t ldx, const void* panel, int64_t ic,
          int64_t cols, const float* b, bool acc) {
  constexpr int KU = MR == 1 ? 4 : MR == 2 ? 2 : 1;
  __m512 c0[KU][MR], c1[KU][MR];
  for (int u = 0; u < KU; ++u)
    for (int i = 0; i < MR; ++i) c0[u][i] = c1[u][i] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + KU <= ic; k += KU) {
    for (int u = 0; u < KU; ++u) {
      __m512 w0, w1;
      // The first tile over a panel streams it from memory: prefetch ahead of the hardware, near
      // into L1 and far into L2. The far one matters for multi-row tiles: their k steps are slow
      // enough that 32 steps ahead is less than the memory latency, so without it memory time and
      // FMA time add up (single core, small shape, 16 rows: -10 % time; 1 and 8 rows: -4 / -12 %).
      // (address arithmetic in integers: the prefetch may point past the panel; it never faults)
      constexpr uintptr_t kStep = P * (BF ? 2 : 4);
      const uintptr_t at = reinterpret_cast<uintptr_t>(panel) + static_cast<uintptr_t>(k + u) * kStep;
      const auto* pf = reinterpret_cast<const char*>(at + kPrefetchK * kStep);
      const auto* pf2 = reinterpret_cast<const char*>(at + kPrefetchL2K * kStep);
      _mm_prefetch(pf, _MM_HINT_T0);
      _mm_prefetch(pf2, _MM_HINT_T1);
      if constexpr (!BF) {
        _mm_prefetch(pf + 64, _MM_HINT_T0);
        _mm_prefetch(pf2 + 64, _MM_HINT_T1);
      }
      load_w<BF>(panel, k + u, w0, w1);
      for (int i = 0; i < MR; ++i) {
        const __m512 xb = _mm512_set1_ps(x[i * ldx + k + u]);
        c0[u][i] = _mm512_fmadd_ps(xb, w0, c0[u][i]);
        c1[u][i] = _mm512_fmadd_ps(xb, w1, c1[u][i]);
      }
    }
  }
  for (; k < ic; ++k) {
    __m512 w0, w1;
    load_w<BF>(panel, k, w0, w1);
    for (int i = 0; i < MR; ++i) {
      const __m512 xb = _mm512_set1_ps(x[i * ldx + k]);
      c0[0][i] = _mm512_fmadd_ps(xb, w0, c0[0][i]);
      c1[0][i] = _mm512_fmadd_ps(xb, w1, c1[0][i]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    __m512 s0 = c0[0][i], s1 = c1[0][i];
    for (int u = 1; u < KU; ++u) {
      s0 = _mm512_add_ps(s0, c0[u][i]);
      s1 = _mm512_add_ps(s1, c1[u][i]);
    }
    float* yr = y + i * ldy;
    if (cols == P && !acc && !b) {
      _mm512_storeu_ps(yr, s0);
      _mm512_storeu_ps(yr + 16, s1);
    } else {
      alignas(64) float v[P];
      _mm512_store_ps(v, s0);
      _mm512_store_ps(v + 16, s1);
      store_row(yr, v, cols, b, acc);
    }
  }
}

template <bool BF>
void run_panel(float* y, int64_t ldy, const float* x, int64_t ldx, const void* panel, int64_t ic,
               int64_t rows, int64_t cols, const float* b, bool acc) {
  // Balanced tiles of at most 12 rows (16 rows -> 8 + 8, not 12 + 4: a 4-row tile has too few
  // accumulators to hide the FMA latency).
  constexpr int64_t MR = 12;
  const int64_t tiles = (rows + MR - 1) / MR;
  for (int64_t t = 0, r = 0; t < tiles; ++t) {
    const int64_t m = rows / tiles + (t < rows % tiles ? 1 : 0);
    float* yr = y + r * ldy;
    const float* xr = x + r * ldx;
    switch (m) {
#define TRINITY_TILE(n) \
  case n: tile<n, BF>(yr, ldy, xr, ldx, panel, ic, cols, b, acc); break;
      TRINITY_TILE(1) TRINITY_TILE(2) TRINITY_TILE(3) TRINITY_TILE(4) TRINITY_TILE(5) TRINITY_TILE(6)
      TRINITY_TILE(7) TRINITY_TILE(8) TRINITY_TILE(9) TRINITY_TILE(10) TRINITY_TILE(11) TRINITY_TILE(12)
#undef TRINITY_TILE
      default: break;
    }
    r += m;
  }
}

#else  // portable fallback

template <bool BF>
void run_panel(float* y, int64_t ldy, const float* x, int64_t ldx, const void* panel, int64_t ic,
               int64_t rows, int64_t cols, const float* b, bool acc) {
  for (int64_t r = 0; r < rows; ++r) {
    float v[P] = {};
    for (int64_t k = 0; k < ic; ++k) {
      const float xv = x[r * ldx + k];
      for (int64_t j = 0; j < P; ++j) {
        float w;
        if constexpr (BF) w = bf16_to_f32(static_cast<const uint16_t*>(panel)[k * P + j]);
        else w = static_cast<const float*>(panel)[k * P + j];
        v[j] += xv * w;
      }
    }
    store_row(y + r * ldy, v, cols, b, acc);
  }
}

#endif

}  // namespace

void packed_linear(float* y, const float* x, const PackedLinear& w, const float* b, int64_t n,
                   bool accumulate) {
  TRINITY_ASSERT(!w.empty(), "packed_linear: empty weight");
  TRINITY_ASSERT(w.parts() == 1, "packed_linear: a fused stack needs packed_linear_parts");
  const int64_t oc = w.oc(), ic = w.ic();
  if (n <= 0) return;
  // One sweep over all rows per panel: the panel (IC x 32) stays in L1/L2 while the rows stream
  // from cache, so the weights are read from memory once per call however many rows there are.
  parallel_for(w.panels(), [&](int64_t p) {
    const int64_t o0 = p * P, cols = std::min(P, oc - o0);
    const float* bp = b ? b + o0 : nullptr;
    if (w.dtype() == PackDType::kBF16)
      run_panel<true>(y + o0, oc, x, ic, w.panel(p), ic, n, cols, bp, accumulate);
    else
      run_panel<false>(y + o0, oc, x, ic, w.panel(p), ic, n, cols, bp, accumulate);
  }, n * ic * P);
}

void packed_linear_parts(const PackedOut* outs, const float* x, const PackedLinear& w, int64_t n) {
  TRINITY_ASSERT(!w.empty(), "packed_linear_parts: empty weight");
  const int64_t ic = w.ic(), nparts = w.parts();
  if (n <= 0) return;
  parallel_for(w.panels(), [&](int64_t p) {
    int64_t i = nparts - 1;
    while (p < w.part_panel(i)) --i;
    const int64_t poc = w.part_oc(i), o0 = (p - w.part_panel(i)) * P, cols = std::min(P, poc - o0);
    const PackedOut& o = outs[i];
    const float* bp = o.b ? o.b + o0 : nullptr;
    if (w.dtype() == PackDType::kBF16)
      run_panel<true>(o.y + o0, poc, x, ic, w.panel(p), ic, n, cols, bp, false);
    else
      run_panel<false>(o.y + o0, poc, x, ic, w.panel(p), ic, n, cols, bp, false);
  }, n * ic * P);
}

}  // namespace trinity::tensor
