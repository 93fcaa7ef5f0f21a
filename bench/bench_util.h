// Helpers of the LoRA benchmarks (bench/lora): fast deterministic weights and the peak RSS.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/parallel.h"
#include "model/transformer.h"
#include "tensor/tensor.h"

namespace trinity::bench {

// Weights U(-0.02, 0.02) from a counter hash (init_random's normal draws take minutes at 7B), norms
// at 1; bf16-held weights get their rounded values. The values do not change the work done.
inline void fast_init(model::Transformer& m) {
  const auto views = m.param_tensors();
  for (size_t k = 0; k < views.size(); ++k) {
    const auto& t = views[k];
    const int64_t n = t.numel();
    const bool norm = m.param_specs()[k].name.find("norm") != std::string::npos;
    const bool bf16 = t.dtype() == tensor::DType::kBF16;
    void* p = const_cast<void*>(t.data());  // a view of the model's own weights
    parallel_for((n + 65535) / 65536,
                 [&](int64_t b) {
                   const int64_t e = std::min(n, (b + 1) * 65536);
                   for (int64_t i = b * 65536; i < e; ++i) {
                     uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
                     x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ull;
                     const float v = norm ? 1.0f : (static_cast<float>(x >> 40) * 0x1.0p-24f - 0.5f) * 0.04f;
                     if (bf16)
                       static_cast<uint16_t*>(p)[i] = tensor::f32_to_bf16(v);
                     else
                       static_cast<float*>(p)[i] = v;
                   }
                 },
                 1);
  }
}

// Peak resident memory of this process so far (getrusage), GiB.
inline double peak_rss_gib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB
}

}  // namespace trinity::bench
