// Panel-packed inference linear layers (see packed_linear.h). The register tile is MR rows x NP
// panels x 32 outputs (2*MR*NP zmm accumulators; MR <= 12, NP = 1, or 2-4 for one- and two-row
// calls so the FMA latency chain does not bound a memory-bound GEMV). Every output is one FMA
// chain over k in order in every tile shape, so results are batch invariant: a row's outputs are
// the same bits whatever other rows share the call. Without AVX-512: AVX2 + FMA tiles of up to 3
// rows (the same chains), else a portable scalar loop over the same layout.
#include "tensor/packed_linear.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
// GCC 12's AVX-512 headers pass _mm512_undefined_* as a merge source: -Wmaybe-uninitialized noise.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "core/error.h"
#include "core/memory.h"
#include "core/parallel.h"
#include "tensor/tensor.h"

namespace trinity::tensor {

namespace {

constexpr int64_t P = PackedLinear::kPanel;

// Every loop over a tile's rows, panels and vectors is unrolled completely, so that the compiler
// keeps the accumulator arrays in registers. Without it GCC 12 left the AVX2 tile's epilogue loops
// rolled, kept its [NP][MR][4] array in memory and stored all 12 accumulators to the stack on
// every k step (12 stores per 12 FMAs): its 3-row tiles ran at half their speed (bench/linear).
#define TRINITY_UNROLL _Pragma("GCC unroll 32")

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
  void* mem = alloc_large(bytes);
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

// One panel's share of a tile: its weights and where its (up to 32) outputs go.
struct PanelJob {
  const void* panel;
  float* y;        // output column 0 of this panel, row 0
  int64_t cols;    // valid outputs (32 but in the last panel of a weight)
  const float* b;  // bias of those outputs, or null
};

constexpr int64_t kMaxGroup = 4;  // panels per parallel item (one-row calls)

// Splits `rows` into balanced tiles of at most MR rows and calls fn(sh, m, xr) for each: sh = the
// np panel jobs moved to the tile's first output row, m its rows, xr its first input row.
template <int64_t MR, class F>
void for_row_tiles(const PanelJob* pj, int64_t np, int64_t ldy, const float* x, int64_t ldx, int64_t rows, F&& fn) {
  const int64_t tiles = (rows + MR - 1) / MR;
  for (int64_t t = 0, r = 0; t < tiles; ++t) {
    const int64_t m = rows / tiles + (t < rows % tiles ? 1 : 0);
    PanelJob sh[kMaxGroup];
    for (int64_t q = 0; q < np; ++q) sh[q] = pj[q], sh[q].y += r * ldy;
    fn(sh, m, x + r * ldx);
    r += m;
  }
}

// Panels per parallel item: one- and two-row calls group panels so their tiles have independent
// accumulators (see tile); more rows keep one panel per item.
int64_t group_of(int64_t rows) {
  return rows == 1 ? 4 : rows == 2 ? 2 : 1;
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

// y[MR rows, NP panels x 32] (+)= x[MR rows, :IC] . panels. Every output is ONE fma chain over
// k = 0..IC-1 in order, whatever MR and NP are, so a row's result does not depend on how many
// rows share the call or which tile it lands in (batch invariance: a sequence's logits are the
// same bits whether it is decoded alone or batched). Few-row tiles get their independent chains
// from several panels at once (NP) instead of from splitting k.
template <int MR, int NP, bool BF>
void tile(const PanelJob* pj, int64_t ldy, const float* x, int64_t ldx, int64_t ic, bool acc) {
  __m512 c0[NP][MR], c1[NP][MR];
  TRINITY_UNROLL
  for (int q = 0; q < NP; ++q) {
    TRINITY_UNROLL
    for (int i = 0; i < MR; ++i) c0[q][i] = c1[q][i] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < ic; ++k) {
    __m512 xb[MR];
    TRINITY_UNROLL
    for (int i = 0; i < MR; ++i) xb[i] = _mm512_set1_ps(x[i * ldx + k]);
    TRINITY_UNROLL
    for (int q = 0; q < NP; ++q) {
      // The first tile over a panel streams it from memory: prefetch ahead of the hardware, near
      // into L1 and far into L2. The far one matters for multi-row tiles: their k steps are slow
      // enough that 32 steps ahead is less than the memory latency, so without it memory time and
      // FMA time add up (single core, small shape, 16 rows: -10 % time; 1 and 8 rows: -4 / -12 %).
      // (address arithmetic in integers: the prefetch may point past the panel; it never faults)
      constexpr uintptr_t kStep = P * (BF ? 2 : 4);
      const uintptr_t at = reinterpret_cast<uintptr_t>(pj[q].panel) + static_cast<uintptr_t>(k) * kStep;
      const auto* pf = reinterpret_cast<const char*>(at + kPrefetchK * kStep);
      const auto* pf2 = reinterpret_cast<const char*>(at + kPrefetchL2K * kStep);
      _mm_prefetch(pf, _MM_HINT_T0);
      _mm_prefetch(pf2, _MM_HINT_T1);
      if constexpr (!BF) {
        _mm_prefetch(pf + 64, _MM_HINT_T0);
        _mm_prefetch(pf2 + 64, _MM_HINT_T1);
      }
      __m512 w0, w1;
      load_w<BF>(pj[q].panel, k, w0, w1);
      TRINITY_UNROLL
      for (int i = 0; i < MR; ++i) {
        c0[q][i] = _mm512_fmadd_ps(xb[i], w0, c0[q][i]);
        c1[q][i] = _mm512_fmadd_ps(xb[i], w1, c1[q][i]);
      }
    }
  }
  TRINITY_UNROLL
  for (int q = 0; q < NP; ++q) {
    TRINITY_UNROLL
    for (int i = 0; i < MR; ++i) {
      float* yr = pj[q].y + i * ldy;
      if (pj[q].cols == P && !acc && !pj[q].b) {
        _mm512_storeu_ps(yr, c0[q][i]);
        _mm512_storeu_ps(yr + 16, c1[q][i]);
      } else {
        alignas(64) float v[P];
        _mm512_store_ps(v, c0[q][i]);
        _mm512_store_ps(v + 16, c1[q][i]);
        store_row(yr, v, pj[q].cols, pj[q].b, acc);
      }
    }
  }
}

// The rows of x in balanced tiles of at most 12 rows (16 rows -> 8 + 8, not 12 + 4: a 4-row tile
// has too few accumulators to hide the FMA latency), over the np panels of pj. One- and two-row
// tiles take 4 / 2 panels at a time (8 independent accumulators either way).
template <bool BF>
void run_panels(const PanelJob* pj, int64_t np, int64_t ldy, const float* x, int64_t ldx, int64_t ic, int64_t rows,
                bool acc) {
  for_row_tiles<12>(pj, np, ldy, x, ldx, rows, [&](const PanelJob* sh, int64_t m, const float* xr) {
    for (int64_t q = 0; q < np;) {
      const int64_t left = np - q;
      if (m == 1 && left >= 4) {
        tile<1, 4, BF>(sh + q, ldy, xr, ldx, ic, acc), q += 4;
      } else if (m == 1 && left == 3) {
        tile<1, 3, BF>(sh + q, ldy, xr, ldx, ic, acc), q += 3;
      } else if (m <= 2 && left >= 2) {
        if (m == 1)
          tile<1, 2, BF>(sh + q, ldy, xr, ldx, ic, acc);
        else
          tile<2, 2, BF>(sh + q, ldy, xr, ldx, ic, acc);
        q += 2;
      } else {
        // clang-format off
        switch (m) {
#define TRINITY_TILE(n) \
  case n: tile<n, 1, BF>(sh + q, ldy, xr, ldx, ic, acc); break;
          TRINITY_TILE(1) TRINITY_TILE(2) TRINITY_TILE(3) TRINITY_TILE(4) TRINITY_TILE(5) TRINITY_TILE(6)
          TRINITY_TILE(7) TRINITY_TILE(8) TRINITY_TILE(9) TRINITY_TILE(10) TRINITY_TILE(11) TRINITY_TILE(12)
#undef TRINITY_TILE
          default: break;
        }
        // clang-format on
        ++q;
      }
    }
  });
}

#elif defined(__AVX2__) && defined(__FMA__)

// AVX2 + FMA (CPUs without AVX-512: AMD Zen 1-3, Intel before Skylake-SP and most client parts):
// the same layout and the same single FMA chain per output over k in order, 32 outputs as four ymm.
// 16 registers hold at most 12 accumulators: tiles of up to 3 rows of one panel or one row of two.
template <bool BF>
inline __m256 load_w8(const void* panel, int64_t k, int c) {
  if constexpr (BF) {
    const auto* p = static_cast<const uint16_t*>(panel) + k * P + 8 * c;
    const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(r), 16));
  } else {
    return _mm256_loadu_ps(static_cast<const float*>(panel) + k * P + 8 * c);
  }
}

template <int MR, int NP, bool BF>
void tile(const PanelJob* pj, int64_t ldy, const float* x, int64_t ldx, int64_t ic, bool acc) {
  __m256 c[NP][MR][4];
  TRINITY_UNROLL
  for (int q = 0; q < NP; ++q) {
    TRINITY_UNROLL
    for (int i = 0; i < MR; ++i) {
      TRINITY_UNROLL
      for (int v = 0; v < 4; ++v) c[q][i][v] = _mm256_setzero_ps();
    }
  }
  for (int64_t k = 0; k < ic; ++k) {
    __m256 xb[MR];
    TRINITY_UNROLL
    for (int i = 0; i < MR; ++i) xb[i] = _mm256_broadcast_ss(x + i * ldx + k);
    TRINITY_UNROLL
    for (int q = 0; q < NP; ++q) {
      constexpr uintptr_t kStep = P * (BF ? 2 : 4);  // see the AVX-512 tile on the prefetches
      const uintptr_t at = reinterpret_cast<uintptr_t>(pj[q].panel) + static_cast<uintptr_t>(k) * kStep;
      _mm_prefetch(reinterpret_cast<const char*>(at + 32 * kStep), _MM_HINT_T0);
      if constexpr (!BF) _mm_prefetch(reinterpret_cast<const char*>(at + 32 * kStep + 64), _MM_HINT_T0);
      TRINITY_UNROLL
      for (int v = 0; v < 4; ++v) {
        const __m256 w = load_w8<BF>(pj[q].panel, k, v);
        TRINITY_UNROLL
        for (int i = 0; i < MR; ++i) c[q][i][v] = _mm256_fmadd_ps(xb[i], w, c[q][i][v]);
      }
    }
  }
  TRINITY_UNROLL
  for (int q = 0; q < NP; ++q) {
    TRINITY_UNROLL
    for (int i = 0; i < MR; ++i) {
      alignas(32) float v[P];
      TRINITY_UNROLL
      for (int u = 0; u < 4; ++u) _mm256_store_ps(v + 8 * u, c[q][i][u]);
      store_row(pj[q].y + i * ldy, v, pj[q].cols, pj[q].b, acc);
    }
  }
}

// Rows in balanced tiles of at most 3; one-row calls take two panels at a time. (A k-blocked
// variant that keeps a 128-step slice of the panel in L1 across the row tiles measured the same
// within this VM's noise in bench/linear, so the simple loop stays.)
template <bool BF>
void run_panels(const PanelJob* pj, int64_t np, int64_t ldy, const float* x, int64_t ldx, int64_t ic, int64_t rows,
                bool acc) {
  for_row_tiles<3>(pj, np, ldy, x, ldx, rows, [&](const PanelJob* sh, int64_t m, const float* xr) {
    for (int64_t q = 0; q < np; ++q) {
      if (m == 1 && q + 1 < np)
        tile<1, 2, BF>(sh + q, ldy, xr, ldx, ic, acc), ++q;
      else if (m == 1)
        tile<1, 1, BF>(sh + q, ldy, xr, ldx, ic, acc);
      else if (m == 2)
        tile<2, 1, BF>(sh + q, ldy, xr, ldx, ic, acc);
      else
        tile<3, 1, BF>(sh + q, ldy, xr, ldx, ic, acc);
    }
  });
}

#else  // portable fallback

// Same layout and the same per-output order (one sum over k in order) as the AVX-512 tiles.
template <bool BF>
void run_panels(const PanelJob* pj, int64_t np, int64_t ldy, const float* x, int64_t ldx, int64_t ic, int64_t rows,
                bool acc) {
  for (int64_t q = 0; q < np; ++q)
    for (int64_t r = 0; r < rows; ++r) {
      float v[P] = {};
      for (int64_t k = 0; k < ic; ++k) {
        const float xv = x[r * ldx + k];
        for (int64_t j = 0; j < P; ++j) {
          float w;
          if constexpr (BF)
            w = bf16_to_f32(static_cast<const uint16_t*>(pj[q].panel)[k * P + j]);
          else
            w = static_cast<const float*>(pj[q].panel)[k * P + j];
          v[j] += xv * w;
        }
      }
      store_row(pj[q].y + r * ldy, v, pj[q].cols, pj[q].b, acc);
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
  const int64_t g = group_of(n), items = (w.panels() + g - 1) / g;
  parallel_for(
      items,
      [&](int64_t it) {
        PanelJob pj[kMaxGroup];
        const int64_t p0 = it * g, np = std::min(g, w.panels() - p0);
        for (int64_t q = 0; q < np; ++q) {
          const int64_t o0 = (p0 + q) * P;
          pj[q] = {w.panel(p0 + q), y + o0, std::min(P, oc - o0), b ? b + o0 : nullptr};
        }
        if (w.dtype() == PackDType::kBF16)
          run_panels<true>(pj, np, oc, x, ic, ic, n, accumulate);
        else
          run_panels<false>(pj, np, oc, x, ic, ic, n, accumulate);
      },
      g * n * ic * P);
}

void packed_linear_parts(const PackedOut* outs, const float* x, const PackedLinear& w, int64_t n) {
  TRINITY_ASSERT(!w.empty(), "packed_linear_parts: empty weight");
  const int64_t ic = w.ic(), nparts = w.parts();
  if (n <= 0) return;
  // Items group panels of one part only (the parts' outputs have different row strides).
  const int64_t g = group_of(n);
  auto part_end = [&](int64_t i) { return i + 1 < nparts ? w.part_panel(i + 1) : w.panels(); };
  auto part_items = [&](int64_t i) { return (part_end(i) - w.part_panel(i) + g - 1) / g; };
  int64_t items = 0;
  for (int64_t i = 0; i < nparts; ++i) items += part_items(i);
  parallel_for(
      items,
      [&](int64_t it) {
        int64_t i = 0;
        while (it >= part_items(i)) it -= part_items(i++);
        const int64_t p0 = w.part_panel(i) + it * g, np = std::min(g, part_end(i) - p0);
        const int64_t poc = w.part_oc(i);
        const PackedOut& o = outs[i];
        PanelJob pj[kMaxGroup];
        for (int64_t q = 0; q < np; ++q) {
          const int64_t o0 = (p0 + q - w.part_panel(i)) * P;
          pj[q] = {w.panel(p0 + q), o.y + o0, std::min(P, poc - o0), o.b ? o.b + o0 : nullptr};
        }
        if (w.dtype() == PackDType::kBF16)
          run_panels<true>(pj, np, poc, x, ic, ic, n, false);
        else
          run_panels<false>(pj, np, poc, x, ic, ic, n, false);
      },
      g * n * ic * P);
}

}  // namespace trinity::tensor
