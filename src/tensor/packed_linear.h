// Inference copies of linear weights in a GEMM-friendly panel layout, fp32 or bf16, and the
// y = x W^T (+ b) kernel over them. W [OC, IC] is stored as panels of 32 outputs, each [IC][32]
// (the last panel zero-padded), so one k step of the kernel is two 16-lane weight loads and one
// broadcast + two FMAs per row: no horizontal sums, no packing per call. bf16 panels halve the
// bytes a decode step streams (batch-1 decode is memory-bound); they are widened to fp32 in
// registers (exact) and all math and accumulation is fp32. bf16 weights are rounded
// (round-to-nearest-even), so results differ from the fp32 weights by ~0.4 % relative per weight.
// Several weights with the same input can share one stack of panels (fused q/k/v, gate/up).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace trinity::tensor {

enum class PackDType { kF32, kBF16 };

class PackedLinear {
 public:
  static constexpr int64_t kPanel = 32;  // outputs per panel
  // One weight of a fused stack: w [oc, IC] row-major fp32.
  struct Part {
    const float* w;
    int64_t oc;
  };
  PackedLinear() = default;
  // Packs w [OC, IC] (row-major fp32).
  PackedLinear(const float* w, int64_t oc, int64_t ic, PackDType dtype);
  // Packs several weights with the same IC into one stack (e.g. q/k/v, or gate/up), each part
  // starting on a panel boundary, so one pass over the input rows computes all of them
  // (packed_linear_parts).
  PackedLinear(const std::vector<Part>& parts, int64_t ic, PackDType dtype);
  int64_t oc() const { return oc_; }  // single part: its outputs; fused: sum of the parts' outputs
  int64_t parts() const { return static_cast<int64_t>(part_oc_.size()); }
  int64_t part_oc(int64_t i) const { return part_oc_[static_cast<size_t>(i)]; }
  int64_t part_panel(int64_t i) const { return part_panel_[static_cast<size_t>(i)]; }  // first panel
  int64_t ic() const { return ic_; }
  PackDType dtype() const { return dtype_; }
  int64_t panels() const { return panels_; }
  size_t bytes() const;
  bool empty() const { return data_ == nullptr; }
  // Panel p: [IC][32] floats (kF32) or uint16 bf16 bits (kBF16).
  const void* panel(int64_t p) const;

 private:
  int64_t oc_ = 0, ic_ = 0, panels_ = 0;
  PackDType dtype_ = PackDType::kF32;
  std::vector<int64_t> part_oc_, part_panel_;
  std::shared_ptr<void> data_;
};

// y[n, :] = x[n, :] W^T + b (b may be null), or y[n, :] += x[n, :] W^T when `accumulate`.
// Parallel over panels; rows in register tiles of up to 12. W has one part.
void packed_linear(float* y /*[N,OC]*/, const float* x /*[N,IC]*/, const PackedLinear& w,
                   const float* b /*[OC] or null*/, int64_t n, bool accumulate);

// Output of one part of a fused stack: y [N, part_oc] (+ b [part_oc], may be null).
struct PackedOut {
  float* y;
  const float* b;
};
// outs[i].y = x W_i^T + b_i for every part i of w, in one parallel pass over all panels.
void packed_linear_parts(const PackedOut* outs, const float* x /*[N,IC]*/, const PackedLinear& w, int64_t n);

}  // namespace trinity::tensor
