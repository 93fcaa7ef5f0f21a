// Hugging Face tokenizer.json loader and byte-level BPE tokenizer (Qwen2/2.5/3, Llama 3, SmolLM),
// exact to HF tokenizers' ids. Pipeline: added tokens are cut out of the raw text first (never
// split), the rest is normalized, pre-tokenized and BPE-encoded; decode maps ids back to bytes and
// releases valid UTF-8 (invalid bytes become U+FFFD). Unsupported component types throw
// UnsupportedError naming the type. Encode/decode are const and thread-safe (the word cache is
// locked); copies share the loaded state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trinity::tok {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false, normalized = false;
};

class Tokenizer {
 public:
  // Loads tokenizer.json from a file, or from DIR/tokenizer.json (plus DIR/tokenizer_config.json
  // when present, for clean_up_tokenization_spaces) when given a directory.
  static Tokenizer load(const std::string& path);
  // Parses tokenizer.json text; `origin` names it in error messages.
  static Tokenizer from_json(std::string_view json_text, const std::string& origin = "tokenizer.json");

  // Token ids of `text` (must be valid UTF-8, else ValueError naming the byte offset). Added and
  // special tokens in the text are recognised. add_special_tokens applies a TemplateProcessing
  // post-processor (e.g. a BOS), as HF's encode(add_special_tokens=True).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  // Text of `ids`; unknown ids throw ValueError. Applies clean_up_tokenization_spaces when enabled.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // Raw bytes a token contributes to decoded text (added tokens: their content).
  const std::string& token_bytes(int32_t id) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;  // vocab or added-token string
  std::string id_to_token(int32_t id) const;                         // "" for an unknown id
  bool is_special(int32_t id) const;
  bool is_added(int32_t id) const;
  int32_t vocab_size() const;  // 1 + largest id
  const std::vector<AddedToken>& added_tokens() const;

  // Configuration setters: they change the shared state of every copy, so call them right after
  // load(), before the tokenizer is shared between threads.
  bool clean_up_tokenization_spaces() const;
  void set_clean_up_tokenization_spaces(bool on);
  // Adds config-declared special token strings (tokenizer_config additional_special_tokens) to the
  // set skip_special_tokens removes; they must already be added tokens.
  void mark_special(std::string_view token);

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// Incremental decoder for streaming: push ids one at a time; each call returns only text that ends
// at a complete UTF-8 boundary, holding back a partial multi-byte character until it completes.
// The concatenation of all push() results and finish() equals decode(ids) without clean-up.
// `tok` must outlive the decoder.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special_tokens = false)
      : tok_(tok), skip_special_(skip_special_tokens) {}
  std::string push(int32_t id);
  std::string finish();  // flushes held-back bytes (invalid ones become U+FFFD)
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::string pending_;
};

// Decodes clean-up as HF does for clean_up_tokenization_spaces (" ." -> ".", " n't" -> "n't", ...).
std::string clean_up_tokenization(std::string_view s);

}  // namespace trinity::tok
