// Tokenizer files of a model directory (see model_files.h).
#include "tokenizer/model_files.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "core/json_limits.h"
#include "core/log.h"

namespace trinity::tok {

using nlohmann::json;

namespace {

json parse_file(const std::string& path) {
  const std::string text = file::read_all(path);
  check_json_depth(text, path, kMaxJsonDepth, "tokenizer");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError("tokenizer", strcat(path, ": ", e.what()));
  }
}

json added(int64_t id, const std::string& content) {
  return {{"id", id},           {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},    {"normalized", false}, {"special", true}};
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 + n in order.
std::string byte_char(int b) {
  auto printable = [](int c) { return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF); };
  int cp = b;
  if (!printable(b)) {
    int n = 0;
    for (int c = 0; c < b; ++c)
      if (!printable(c)) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace

Tokenizer load_model_tokenizer(const std::string& dir, int64_t model_vocab) {
  Tokenizer t = Tokenizer::load(dir);
  if (t.vocab_size() >= model_vocab) return t;
  const std::string path = file::join(dir, "tokenizer.json");
  json j = parse_file(path);
  if (!j.contains("added_tokens") || !j["added_tokens"].is_array()) j["added_tokens"] = json::array();
  for (int64_t id = t.vocab_size(); id < model_vocab; ++id) {
    if (!t.id_to_token(static_cast<int32_t>(id)).empty()) continue;
    j["added_tokens"].push_back(added(id, strcat("<|trinity_vocab_pad_", id, "|>")));
  }
  Tokenizer padded = Tokenizer::from_json(j.dump(), path);
  padded.set_clean_up_tokenization_spaces(t.clean_up_tokenization_spaces());
  log::info("tokenizer: model vocab ", model_vocab, " > tokenizer ids ", t.vocab_size(),
            "; the padding ids decode to no text");
  return padded;
}

std::vector<int32_t> model_stop_ids(const std::string& dir, const Tokenizer& t, const TokenizerConfig& tc) {
  std::vector<int32_t> ids;
  auto add = [&](int64_t id) {
    if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(static_cast<int32_t>(id));
  };
  if (tc.eos_token)
    if (auto id = t.token_to_id(*tc.eos_token)) add(*id);
  const std::string gen = file::join(dir, "generation_config.json");
  if (file::exists(gen)) {
    const json j = parse_file(gen);
    if (auto it = j.find("eos_token_id"); it != j.end()) {
      if (it->is_number_integer()) add(it->get<int64_t>());
      if (it->is_array())
        for (const auto& v : *it)
          if (v.is_number_integer()) add(v.get<int64_t>());
    }
  }
  return ids;
}

namespace {

json byte_tokenizer_json() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_char(b)] = b;
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                           {"use_regex", true}};
  json tj = {{"version", "1.0"},
             {"truncation", nullptr},
             {"padding", nullptr},
             {"added_tokens", json::array({added(kByteEndOfText, "<|endoftext|>"), added(kByteImStart, "<|im_start|>"),
                                           added(kByteImEnd, "<|im_end|>")})},
             {"normalizer", nullptr},
             {"pre_tokenizer", byte_level},
             {"post_processor", nullptr},
             {"decoder", byte_level},
             {"model",
              {{"type", "BPE"},
               {"dropout", nullptr},
               {"unk_token", nullptr},
               {"continuing_subword_prefix", ""},
               {"end_of_word_suffix", ""},
               {"fuse_unk", false},
               {"byte_fallback", false},
               {"ignore_merges", false},
               {"vocab", vocab},
               {"merges", json::array()}}}};
  return tj;
}

}  // namespace

Tokenizer byte_tokenizer() {
  return Tokenizer::from_json(byte_tokenizer_json().dump(), "the built-in byte-level tokenizer");
}

void write_byte_tokenizer(const std::string& dir) {
  const json tj = byte_tokenizer_json();
  const std::string tmpl =
      "{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";
  json cj = {{"bos_token", nullptr},
             {"eos_token", "<|endoftext|>"},
             {"pad_token", "<|endoftext|>"},
             {"additional_special_tokens", json::array({"<|im_start|>", "<|im_end|>"})},
             {"clean_up_tokenization_spaces", false},
             {"model_max_length", 4096},
             {"chat_template", tmpl}};
  file::make_dirs(dir);
  file::write_atomic(file::join(dir, "tokenizer.json"), tj.dump(1));
  file::write_atomic(file::join(dir, "tokenizer_config.json"), cj.dump(1));
}

}  // namespace trinity::tok
