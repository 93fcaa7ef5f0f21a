// Small model configs for tests: a family's defaults (model::default_config) with the sizes a test
// names, so each test states only what matters to it:  tiny_config({.arch = kQwen3, .vocab = 41}).
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace trinity::test {

struct TinyShape {
  model::Arch arch = model::Arch::kQwen2;
  int64_t hidden = 32, inter = 48, layers = 2, heads = 4, kv_heads = 2, head_dim = 8, vocab = 37;
  int64_t max_pos = 256;
  bool tie = false;
  std::vector<int64_t> eos = {};
};

inline model::ModelConfig tiny_config(const TinyShape& s) {
  model::ModelConfig c = model::default_config(s.arch);
  c.hidden_size = s.hidden;
  c.intermediate_size = s.inter;
  c.num_hidden_layers = s.layers;
  c.num_attention_heads = s.heads;
  c.num_key_value_heads = s.kv_heads;
  c.head_dim = s.head_dim;
  c.vocab_size = s.vocab;
  c.max_position_embeddings = s.max_pos;
  c.tie_word_embeddings = s.tie;
  if (!s.eos.empty()) c.eos_token_ids = s.eos;
  return c;
}

}  // namespace trinity::test
