// Shared by the LoRA and weight-storage tests: the tiny model of each family and a random packed
// batch of next-token sequences over its first 37 token ids.
#pragma once

#include <vector>

#include "common/tiny_config.h"
#include "core/rng.h"
#include "model/transformer.h"

namespace trinity::model::testing {

inline ModelConfig tiny_lora_config(Arch arch) {
  return test::tiny_config({.arch = arch, .head_dim = arch == Arch::kQwen3 ? 12 : 8, .tie = arch == Arch::kQwen3});
}

inline Batch random_batch(const std::vector<int>& lens, uint64_t seed) {
  Rng r(seed);
  std::vector<std::vector<int32_t>> seqs;
  for (int n : lens) {
    std::vector<int32_t> s;
    for (int i = 0; i < n; ++i) s.push_back(static_cast<int32_t>(r.below(37)));
    seqs.push_back(s);
  }
  return Batch::next_token(seqs);
}

// Rank 4, alpha 8 on every linear.
inline LoraConfig lora4() {
  LoraConfig c;
  c.rank = 4;
  c.alpha = 8;
  c.target_modules = {"all-linear"};
  return c;
}

}  // namespace trinity::model::testing
