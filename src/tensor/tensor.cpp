// Tensor storage and dtype conversions (see tensor.h).
#include "tensor/tensor.h"

#include <cstdlib>
#include <cmath>
#include <cstring>
#include <algorithm>

#include "core/error.h"
#include "core/parallel.h"

namespace trinity::tensor {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kF32: return "F32";
    case DType::kBF16: return "BF16";
    case DType::kF16: return "F16";
  }
  return "?";
}

size_t dtype_size(DType d) { return d == DType::kF32 ? 4 : 2; }

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t s : shape_) TRINITY_ASSERT(s >= 0, "negative dimension");
  const size_t bytes = (nbytes() + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes ? bytes : 64);
  TRINITY_ASSERT(p, "out of memory allocating ", bytes, " bytes");
  std::memset(p, 0, bytes);
  holder_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  data_ = p;
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> shape, void* data,
                    std::shared_ptr<void> holder) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.holder_ = std::move(holder);
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape_) n *= s;
  return n;
}

float* Tensor::f32() {
  TRINITY_ASSERT(dtype_ == DType::kF32, "tensor is ", dtype_name(dtype_), ", not F32");
  return static_cast<float*>(data_);
}

const float* Tensor::f32() const {
  TRINITY_ASSERT(dtype_ == DType::kF32, "tensor is ", dtype_name(dtype_), ", not F32");
  return static_cast<const float*>(data_);
}

Tensor Tensor::to_f32() const {
  Tensor out(DType::kF32, shape_);
  convert_to_f32(out.f32(), data_, dtype_, numel());
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == DType::kF32) return to_f32();
  Tensor f = dtype_ == DType::kF32 ? *this : to_f32();
  Tensor out(dtype, shape_);
  const float* src = f.f32();
  auto* dst = static_cast<uint16_t*>(out.data());
  const int64_t n = numel();
  if (dtype == DType::kBF16)
    for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
  return out;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Tensor::shape_str() const {
  return tensor::shape_str(shape_);
}

float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      u = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (absu >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absu < 0x38800000u) {  // subnormal or zero in f16
    float a;
    std::memcpy(&a, &absu, 4);
    // a * 2^24 rounded to nearest even gives the subnormal mantissa.
    const float scaled = a * 16777216.0f;
    const uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  const uint32_t rounding = 0xfffu + ((absu >> 13) & 1u);
  const uint32_t r = absu + rounding;
  return static_cast<uint16_t>(sign | (((r >> 23) - 127 + 15) << 10) | ((r >> 13) & 0x3ffu));
}

void convert_to_f32(float* dst, const void* src, DType dtype, int64_t n) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::kBF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      parallel_for((n + 65535) / 65536, [&](int64_t b) {
        const int64_t end = std::min(n, (b + 1) * 65536);
        for (int64_t i = b * 65536; i < end; ++i) {  // bf16 -> fp32 is a shift (this loop vectorises)
          const uint32_t u = static_cast<uint32_t>(s[i]) << 16;
          std::memcpy(dst + i, &u, 4);
        }
      });
      return;
    }
    case DType::kF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
  }
}

}  // namespace trinity::tensor
