// Inference copies of linear weights in a GEMM-friendly panel layout, fp32 or bf16, and the
// y = x W^T (+ b) kernel over them. W [OC, IC] is stored as panels of 32 outputs, each [IC][32]
// (the last panel zero-padded), so one k step of the kernel is two 16-lane weight loads and one
// broadcast + two FMAs per row: no horizontal sums, no packing per call. bf16 panels halve the
// bytes a decode step streams (batch-1 decode is memory-bound); they are widened to fp32 in
// registers (exact) and all math and accumulation is fp32. bf16 weights are rounded
// (round-to-nearest-even), so results differ from the fp32 weights by ~0.4 % relative per weight.
#pragma once

#include <cstdint>
#include <memory>

namespace trinity::tensor {

enum class PackDType { kF32, kBF16 };

class PackedLinear {
 public:
  static constexpr int64_t kPanel = 32;  // outputs per panel
  PackedLinear() = default;
  // Packs w [OC, IC] (row-major fp32).
  PackedLinear(const float* w, int64_t oc, int64_t ic, PackDType dtype);
  int64_t oc() const { return oc_; }
  int64_t ic() const { return ic_; }
  PackDType dtype() const { return dtype_; }
  int64_t panels() const { return (oc_ + kPanel - 1) / kPanel; }
  size_t bytes() const;
  bool empty() const { return data_ == nullptr; }
  // Panel p: [IC][32] floats (kF32) or uint16 bf16 bits (kBF16).
  const void* panel(int64_t p) const;

 private:
  int64_t oc_ = 0, ic_ = 0;
  PackDType dtype_ = PackDType::kF32;
  std::shared_ptr<void> data_;
};

// y[n, :] = x[n, :] W^T + b (b may be null), or y[n, :] += x[n, :] W^T when `accumulate`.
// Parallel over panels; rows in register tiles of up to 12.
void packed_linear(float* y /*[N,OC]*/, const float* x /*[N,IC]*/, const PackedLinear& w,
                   const float* b /*[OC] or null*/, int64_t n, bool accumulate);

}  // namespace trinity::tensor
