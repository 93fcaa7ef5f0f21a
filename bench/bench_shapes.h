// The model shapes shared by bench/train and bench/generate (the engine-core issue's configs):
// tiny, small, and the Qwen2.5-0.5B / 1.5B / 7B shapes, as Qwen2-layout configs. The PyTorch baselines
// (torch_train.py, torch_generate.py) list the same numbers.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>

#include "model/config.h"

namespace trinity::bench {

struct Shape {
  const char* name;
  int64_t c, layers, nh, nkv, inter, vocab;
  int64_t batch, seq;  // the training benchmark's batch
  bool tie;
};

inline constexpr Shape kShapes[] = {
    {"tiny", 256, 4, 4, 2, 1024, 4096, 8, 256, false},
    {"small", 512, 8, 8, 2, 2048, 32000, 8, 256, false},
    {"qwen05", 896, 24, 14, 2, 4864, 151936, 2, 256, true},
    {"qwen15", 1536, 28, 12, 2, 8960, 151936, 8, 256, true},   // Qwen2.5-1.5B
    {"qwen7", 3584, 28, 28, 4, 18944, 152064, 8, 256, false},  // Qwen2.5-7B
};

inline const Shape* find_shape(const char* name) {
  for (const auto& s : kShapes)
    if (std::strcmp(name, s.name) == 0) return &s;
  return nullptr;
}

inline model::ModelConfig shape_config(const Shape& s) {
  model::ModelConfig cfg = model::default_config(model::Arch::kQwen2);
  cfg.hidden_size = s.c;
  cfg.num_hidden_layers = s.layers;
  cfg.num_attention_heads = s.nh;
  cfg.num_key_value_heads = s.nkv;
  cfg.head_dim = s.c / s.nh;
  cfg.intermediate_size = s.inter;
  cfg.vocab_size = s.vocab;
  cfg.tie_word_embeddings = s.tie;
  cfg.max_position_embeddings = 4096;
  return cfg;
}

}  // namespace trinity::bench
