// Tensor: dtype + shape + data pointer, owned (aligned heap) or a view into memory kept alive by
// a shared holder (e.g. a memory-mapped safetensors file). Row-major, contiguous.
// Kernels work on raw float* with shape comments; Tensor is for storage, IO and parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trinity::tensor {

enum class DType { kF32, kBF16, kF16 };

const char* dtype_name(DType d);  // "F32", "BF16", "F16" (safetensors spelling)
size_t dtype_size(DType d);

class Tensor {
 public:
  Tensor() = default;
  // Allocates zeroed, 64-byte aligned storage.
  Tensor(DType dtype, std::vector<int64_t> shape);
  // A view of memory owned by `holder` (kept alive as long as the tensor).
  static Tensor view(DType dtype, std::vector<int64_t> shape, void* data,
                     std::shared_ptr<void> holder);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(static_cast<size_t>(i)); }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool empty() const { return data_ == nullptr; }

  void* data() { return data_; }
  const void* data() const { return data_; }
  float* f32();  // asserts dtype F32
  const float* f32() const;

  // A new F32 tensor with the values converted (copy even when already F32).
  Tensor to_f32() const;
  // A new tensor of `dtype` (round-to-nearest-even for bf16/f16).
  Tensor to(DType dtype) const;
  std::string shape_str() const;  // "[2, 3]"

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> holder_;
};

// Scalar conversions (bit-exact with PyTorch: bf16/f16 round to nearest even, NaN preserved).
// "[2, 3]"
std::string shape_str(const std::vector<int64_t>& shape);

float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Converts n elements of src (of dtype) to float.
void convert_to_f32(float* dst, const void* src, DType dtype, int64_t n);

}  // namespace trinity::tensor
