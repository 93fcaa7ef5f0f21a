// Helpers for the trainer tests: tiny models, synthetic experiences, and a byte-level tokenizer with a
// ChatML-like template (ids 0..255 = bytes, 256 = <|im_start|>, 257 = <|im_end|>).
#pragma once

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../common/tiny_config.h"
#include "buffer/experience.h"
#include "core/rng.h"
#include "model/transformer.h"
#include "tokenizer/chat.h"
#include "tokenizer/unicode.h"

namespace trinity::test {

inline model::Transformer tiny_model(int64_t vocab = 37, uint64_t seed = 7) {
  model::Transformer m(tiny_config({.vocab = vocab}));
  m.init_random(seed, 0.1f);
  return m;
}

// Experience with `P` prompt tokens and `R` response tokens (ids from rng), task/run ids given.
inline buffer::Experience make_exp(Rng& rng, int64_t P, int64_t R, int64_t vocab, int64_t task, int64_t run,
                                   double reward) {
  buffer::Experience e;
  e.eid.batch = "1", e.eid.task = task, e.eid.run = run;
  for (int64_t i = 0; i < P + R; ++i) e.tokens.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocab))));
  e.prompt_length = P;
  e.logprobs.assign(static_cast<size_t>(R), -2.0f);
  e.action_mask.assign(static_cast<size_t>(R), 1);
  e.reward = reward;
  return e;
}

inline nlohmann::json byte_tokenizer_json() {
  using json = nlohmann::json;
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[tok::uni::bytes_to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  json t;
  t["version"] = "1.0";
  t["added_tokens"] = json::array({
      {{"id", 256}, {"content", "<|im_start|>"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}},
      {{"id", 257}, {"content", "<|im_end|>"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}},
  });
  t["normalizer"] = nullptr;
  t["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  t["post_processor"] = nullptr;
  t["decoder"] = {{"type", "ByteLevel"}};
  t["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}};
  return t;
}

inline tok::Tokenizer byte_tokenizer() { return tok::Tokenizer::from_json(byte_tokenizer_json().dump(), "byte.json"); }

inline tok::ChatFormatter byte_chat() {
  nlohmann::json cfg = {
      {"eos_token", "<|im_end|>"},
      {"chat_template",
       "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
       "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"}};
  return tok::ChatFormatter(byte_tokenizer(), tok::TokenizerConfig::parse(cfg.dump()));
}

inline bool same_params(const model::Transformer& a, const model::Transformer& b) {
  return a.num_params() == b.num_params() &&
         std::memcmp(a.params(), b.params(), sizeof(float) * static_cast<size_t>(a.num_params())) == 0;
}

}  // namespace trinity::test
