// Tokenizer files that go with a model directory: loading the tokenizer padded to the model's
// vocabulary, the stop ids a model directory declares, and a self-contained byte-level BPE
// tokenizer (256 byte tokens, no merges, ChatML special tokens and template) that `trinity
// init-model --tokenizer bytes` writes so that a model made from nothing can be chatted with,
// served and trained (the quickstart).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace trinity::tok {

// DIR/tokenizer.json. Models pad their vocabulary (Qwen3: 151936 rows, 151669 tokenizer ids); a
// sampled padding id must decode to nothing rather than fail, so ids the tokenizer lacks below
// model_vocab are registered as special added tokens (skipped in text).
Tokenizer load_model_tokenizer(const std::string& dir, int64_t model_vocab);

// Token ids that end a generation besides the model config's EOS: the tokenizer's eos_token
// (<|im_end|> for Qwen chat models) and generation_config.json's eos_token_id.
std::vector<int32_t> model_stop_ids(const std::string& dir, const Tokenizer& t, const TokenizerConfig& tc);

// Byte-level tokenizer: ids 0..255 are the bytes, then <|endoftext|> (256), <|im_start|> (257),
// <|im_end|> (258). eos_token is <|endoftext|>; the chat template is ChatML.
inline constexpr int32_t kByteVocab = 259;
inline constexpr int32_t kByteEndOfText = 256, kByteImStart = 257, kByteImEnd = 258;
// Writes DIR/tokenizer.json and DIR/tokenizer_config.json.
void write_byte_tokenizer(const std::string& dir);
// The same tokenizer in memory (no chat template), for clients without tokenizer files.
Tokenizer byte_tokenizer();

}  // namespace trinity::tok
