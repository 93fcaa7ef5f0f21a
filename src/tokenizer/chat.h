// tokenizer_config.json (special tokens, chat templates) and chat formatting: render a conversation
// with the model's Jinja chat template exactly as transformers' apply_chat_template does, tokenize
// it with special tokens recognised, and mark which tokens the assistant produced.
// Assistant mask: from {% generation %} blocks when the template has them; otherwise each
// assistant turn i spans from the end of render(messages[:i], add_generation_prompt=True) (which
// must be a prefix of the full rendering) to the end of the first special token after it (the
// end-of-turn token the model emits, e.g. <|im_end|> or <|eot_id|>).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja.h"
#include "tokenizer/tokenizer.h"

namespace trinity::tok {

struct TokenizerConfig {
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  std::vector<std::string> additional_special_tokens;
  std::vector<std::pair<std::string, std::string>> chat_templates;  // name -> source ("default" first)
  bool clean_up_tokenization_spaces = false;
  bool add_bos_token = false;

  // Reads DIR/tokenizer_config.json (or the given file). ConfigError names the bad key.
  static TokenizerConfig load(const std::string& path);
  static TokenizerConfig parse(const std::string& json_text, const std::string& origin = "tokenizer_config.json");
  // The template source called `name`; ConfigError listing the available names when absent.
  const std::string& chat_template(const std::string& name = "default") const;
};

struct ChatOptions {
  bool add_generation_prompt = false;
  std::optional<bool> enable_thinking;  // passed to the template only when set
  jinja::Value tools;                   // a list, or undefined for none (rendered as `tools = none`)
  jinja::Value extra;                   // optional object of extra template variables (date_string, ...)
};

struct ChatEncoding {
  std::string rendered;
  std::vector<int32_t> ids;
  std::vector<uint8_t> assistant_mask;                   // [T] 1 = token produced by the assistant
  std::vector<std::pair<size_t, size_t>> assistant_spans;  // byte ranges in `rendered`
};

class ChatFormatter {
 public:
  ChatFormatter(Tokenizer tok, const TokenizerConfig& cfg, const std::string& template_name = "default");
  // Loads DIR/tokenizer.json and DIR/tokenizer_config.json.
  static ChatFormatter load(const std::string& dir, const std::string& template_name = "default");

  // `messages` is a list of {"role", "content", ...} objects.
  std::string render(const jinja::Value& messages, const ChatOptions& opt) const;
  // Rendered text, its ids (special tokens recognised, no extra BOS) and the assistant mask.
  ChatEncoding encode(const jinja::Value& messages, const ChatOptions& opt, bool with_mask = true) const;
  const Tokenizer& tokenizer() const { return tok_; }

 private:
  std::string render_impl(const jinja::Value& messages, const ChatOptions& opt,
                          std::vector<jinja::GenerationSpan>* gen) const;
  Tokenizer tok_;
  TokenizerConfig cfg_;
  jinja::Template tmpl_;
};

}  // namespace trinity::tok
