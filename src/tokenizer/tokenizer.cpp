// tokenizer.json loading and the encode/decode pipeline (see tokenizer.h). Mirrors HF tokenizers:
// added tokens are matched leftmost-longest on the raw text (normalized=false) and on the normalized
// text (normalized=true); lstrip/rstrip eat neighbouring whitespace; a model vocab token id never
// collides with an added token (added tokens win on lookup).
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/file.h"
#include "core/json_limits.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"

namespace trinity::tok {

using json = nlohmann::json;

struct Tokenizer::Impl {
  std::string origin;
  Normalization normalization = Normalization::None;
  std::vector<std::unique_ptr<PreTokenizerStep>> pre;
  std::unique_ptr<BpeModel> model;
  bool byte_level_decoder = false;
  std::vector<int32_t> prefix_ids, suffix_ids;  // TemplateProcessing "single"
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int32_t> added_by_content;
  std::unordered_map<int32_t, size_t> added_index;  // id -> index in `added`
  std::unordered_set<int32_t> special_ids;
  // Added-token candidates bucketed by first byte, longest first; raw and normalized sets.
  std::array<std::vector<size_t>, 256> raw_first, norm_first;
  bool has_normalized_added = false;
  std::vector<std::string> id_text;   // id -> token string as in the file ("" if none)
  std::vector<std::string> id_bytes;  // id -> bytes it decodes to
  std::vector<uint8_t> id_valid;
  bool clean_up = false;

  struct Section {
    std::string_view text;
    int32_t added_id;  // -1 for plain text
  };
  void split_added(std::string_view text, const std::array<std::vector<size_t>, 256>& first,
                   std::vector<Section>& out) const;
  void encode_plain(std::string_view text, std::vector<int32_t>& ids) const;
};

namespace {

bool is_space_byte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

std::string dump(const json& j) { return j.is_null() ? "null" : j.dump(); }

const json& require(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw ConfigError("tokenizer", strcat(where, ": missing field \"", key, "\""));
  return j.at(key);
}

}  // namespace

void Tokenizer::Impl::split_added(std::string_view text, const std::array<std::vector<size_t>, 256>& first,
                                  std::vector<Section>& out) const {
  size_t start = 0, i = 0;
  const size_t n = text.size();
  while (i < n) {
    const auto& cands = first[static_cast<unsigned char>(text[i])];
    const AddedToken* hit = nullptr;
    for (size_t ci : cands) {
      const AddedToken& t = added[ci];
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      if (t.single_word) {
        const bool left_ok = i == 0 || !is_word_byte(static_cast<unsigned char>(text[i - 1]));
        const size_t e = i + t.content.size();
        const bool right_ok = e >= n || !is_word_byte(static_cast<unsigned char>(text[e]));
        if (!left_ok || !right_ok) continue;
      }
      hit = &t;
      break;
    }
    if (!hit) {
      ++i;
      continue;
    }
    std::string_view before = text.substr(start, i - start);
    if (hit->lstrip)
      while (!before.empty() && is_space_byte(before.back())) before.remove_suffix(1);
    if (!before.empty()) out.push_back({before, -1});
    out.push_back({text.substr(i, hit->content.size()), hit->id});
    i += hit->content.size();
    if (hit->rstrip)
      while (i < n && is_space_byte(text[i])) ++i;
    start = i;
  }
  if (start < n) out.push_back({text.substr(start), -1});
}

void Tokenizer::Impl::encode_plain(std::string_view text, std::vector<int32_t>& ids) const {
  std::string normalized = normalization == Normalization::NFC ? uni::nfc(text) : std::string(text);
  std::vector<Section> subs;
  if (has_normalized_added) split_added(normalized, norm_first, subs);
  else subs.push_back({normalized, -1});
  std::vector<std::string> pieces;
  for (const Section& s : subs) {
    if (s.added_id >= 0) {
      ids.push_back(s.added_id);
      continue;
    }
    pieces.clear();
    pieces.emplace_back(s.text);
    for (const auto& step : pre) step->apply(pieces);
    for (const std::string& p : pieces) model->encode_word(p, ids);
  }
}

Tokenizer Tokenizer::load(const std::string& path) {
  if (file::is_dir(path)) {
    const std::string tj = file::join(path, "tokenizer.json");
    if (!file::exists(tj))
      throw IoError("tokenizer", strcat(path, ": no tokenizer.json in this directory"));
    Tokenizer t = from_json(file::read_all(tj), tj);
    const std::string cj = file::join(path, "tokenizer_config.json");
    if (file::exists(cj)) {
      json cfg;
      const std::string cfg_text = file::read_all(cj);
      check_json_depth(cfg_text, cj, kMaxJsonDepth, "tokenizer");
      try {
        cfg = json::parse(cfg_text);
      } catch (const json::exception& e) {
        throw ConfigError("tokenizer", strcat(cj, ": invalid JSON: ", e.what()));
      }
      if (cfg.contains("clean_up_tokenization_spaces") && cfg["clean_up_tokenization_spaces"].is_boolean())
        t.impl_->clean_up = cfg["clean_up_tokenization_spaces"].get<bool>();
      if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array())
        for (const auto& s : cfg["additional_special_tokens"]) {
          if (s.is_string()) t.mark_special(s.get<std::string>());
          else if (s.is_object() && s.contains("content") && s["content"].is_string())
            t.mark_special(s["content"].get<std::string>());
        }
    }
    return t;
  }
  if (!file::exists(path)) throw IoError("tokenizer", strcat(path, ": no such file"));
  return from_json(file::read_all(path), path);
}

Tokenizer Tokenizer::from_json(std::string_view text, const std::string& origin) {
  json j;
  check_json_depth(text, origin, kMaxJsonDepth, "tokenizer");
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError("tokenizer", strcat(origin, ": invalid JSON: ", e.what()));
  }
  if (!j.is_object()) throw ConfigError("tokenizer", strcat(origin, ": expected a JSON object at top level"));
  auto impl = std::make_shared<Impl>();
  impl->origin = origin;
  try {
    // Model.
    const json& m = require(j, "model", origin);
    const std::string mtype = m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "BPE";
    if (mtype != "BPE")
      throw UnsupportedError("tokenizer", strcat(origin, ": model type \"", mtype, "\" is not supported (supported: BPE)"));
    if (m.contains("byte_fallback") && m["byte_fallback"].is_boolean() && m["byte_fallback"].get<bool>())
      throw UnsupportedError("tokenizer", strcat(origin, ": BPE with byte_fallback (SentencePiece-style) is not supported"));
    for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (m.contains(k) && m[k].is_string() && !m[k].get<std::string>().empty())
        throw UnsupportedError("tokenizer", strcat(origin, ": BPE model.", k, " is not supported"));
    if (m.contains("dropout") && m["dropout"].is_number() && m["dropout"].get<double>() > 0)
      throw UnsupportedError("tokenizer", strcat(origin, ": BPE dropout is not supported"));

    impl->normalization = make_normalizer(dump(j.value("normalizer", json())));
    bool has_byte_level = false;
    impl->pre = make_pre_tokenizer(dump(j.value("pre_tokenizer", json())), has_byte_level);
    if (!has_byte_level)
      throw UnsupportedError("tokenizer", strcat(origin, ": only byte-level BPE is supported (pre_tokenizer has no ByteLevel step)"));

    // Decoder.
    const json dec = j.value("decoder", json());
    if (!dec.is_null()) {
      const std::string dtype = dec.value("type", "");
      if (dtype == "ByteLevel") impl->byte_level_decoder = true;
      else if (dtype == "Sequence" && dec.contains("decoders") && dec["decoders"].is_array() &&
               dec["decoders"].size() == 1 && dec["decoders"][0].value("type", "") == "ByteLevel")
        impl->byte_level_decoder = true;
      else
        throw UnsupportedError("tokenizer", strcat(origin, ": decoder type \"", dtype, "\" is not supported (supported: ByteLevel, null)"));
    }

    // Vocab.
    const json& vj = require(m, "vocab", origin + " model");
    if (!vj.is_object()) throw ConfigError("tokenizer", strcat(origin, ": model.vocab: expected an object {token: id}"));
    ByteVocab vocab;
    vocab.reserve(vj.size() * 2);
    // Ids index the id tables (allocated max_id + 1 long): bounded like ModelConfig's vocab_size.
    constexpr int64_t kMaxId = (int64_t{1} << 30) - 1;
    int32_t max_id = -1;
    std::vector<std::pair<int32_t, std::string>> id_tok;
    id_tok.reserve(vj.size());
    std::string bytes;
    for (auto it = vj.begin(); it != vj.end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > kMaxId)
        throw ConfigError("tokenizer",
                          strcat(origin, ": model.vocab[\"", it.key(), "\"]: expected an integer id in [0, ", kMaxId,
                                 "], got ", it.value().dump()));
      const auto id = static_cast<int32_t>(it.value().get<int64_t>());
      max_id = std::max(max_id, id);
      id_tok.emplace_back(id, it.key());
      if (uni::byte_level_to_bytes(it.key(), bytes)) vocab.emplace(bytes, id);
    }
    // Merges: "a b" strings or ["a", "b"] pairs, in byte-level form.
    const json& mj = require(m, "merges", origin + " model");
    if (!mj.is_array()) throw ConfigError("tokenizer", strcat(origin, ": model.merges: expected a list"));
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(mj.size());
    std::string a, b;
    for (size_t r = 0; r < mj.size(); ++r) {
      const json& e = mj[r];
      std::string sa, sb;
      if (e.is_string()) {
        const std::string& s = e.get_ref<const std::string&>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          throw ConfigError("tokenizer", strcat(origin, ": model.merges[", r, "] = \"", s, "\": expected \"left right\""));
        sa = s.substr(0, sp), sb = s.substr(sp + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        sa = e[0].get<std::string>(), sb = e[1].get<std::string>();
      } else {
        throw ConfigError("tokenizer", strcat(origin, ": model.merges[", r, "]: expected \"a b\" or [\"a\", \"b\"]"));
      }
      if (!uni::byte_level_to_bytes(sa, a) || !uni::byte_level_to_bytes(sb, b))
        throw ConfigError("tokenizer", strcat(origin, ": model.merges[", r, "]: token is not in the byte-level alphabet"));
      merges.emplace_back(a, b);
    }
    int32_t unk_id = -1;
    if (m.contains("unk_token") && m["unk_token"].is_string()) {
      auto it = vj.find(m["unk_token"].get<std::string>());
      if (it != vj.end()) unk_id = it.value().get<int32_t>();
    }
    const bool ignore_merges = m.value("ignore_merges", false);

    // Added tokens.
    const json at = j.value("added_tokens", json::array());
    if (!at.is_array()) throw ConfigError("tokenizer", strcat(origin, ": added_tokens: expected a list"));
    for (size_t i = 0; i < at.size(); ++i) {
      const json& t = at[i];
      const std::string where = strcat(origin, ": added_tokens[", i, "]");
      const json& idj = require(t, "id", where);
      const json& cj = require(t, "content", where);
      if (!idj.is_number_integer() || idj.get<int64_t>() < 0 || idj.get<int64_t>() > kMaxId || !cj.is_string() ||
          cj.get<std::string>().empty())
        throw ConfigError("tokenizer", strcat(where, ": expected an integer id in [0, ", kMaxId,
                                              "] and non-empty string content, got id ", idj.dump()));
      AddedToken a_tok;
      a_tok.id = idj.get<int32_t>();
      a_tok.content = cj.get<std::string>();
      a_tok.special = t.value("special", false);
      a_tok.lstrip = t.value("lstrip", false);
      a_tok.rstrip = t.value("rstrip", false);
      a_tok.single_word = t.value("single_word", false);
      a_tok.normalized = t.value("normalized", !a_tok.special);
      if (uni::find_invalid_utf8(a_tok.content) != std::string::npos)
        throw ConfigError("tokenizer", strcat(where, ": content is not valid UTF-8"));
      max_id = std::max(max_id, a_tok.id);
      impl->added_index[a_tok.id] = impl->added.size();
      impl->added_by_content[a_tok.content] = a_tok.id;
      if (a_tok.special) impl->special_ids.insert(a_tok.id);
      impl->added.push_back(std::move(a_tok));
    }
    // With NFC, a normalized added token is matched in its normalized form.
    for (size_t i = 0; i < impl->added.size(); ++i) {
      AddedToken& t = impl->added[i];
      if (t.normalized && impl->normalization == Normalization::NFC) t.content = uni::nfc(t.content);
      auto& first = t.normalized && impl->normalization != Normalization::None ? impl->norm_first : impl->raw_first;
      if (&first == &impl->norm_first) impl->has_normalized_added = true;
      first[static_cast<unsigned char>(t.content[0])].push_back(i);
    }
    for (auto* first : {&impl->raw_first, &impl->norm_first})
      for (auto& v : *first)
        std::stable_sort(v.begin(), v.end(), [&](size_t x, size_t y) {
          return impl->added[x].content.size() > impl->added[y].content.size();
        });

    // id -> text / bytes tables, max_id + 1 long: refuse ids far sparser than a real vocabulary.
    const int64_t n_tokens = static_cast<int64_t>(id_tok.size() + impl->added.size());
    if (int64_t{max_id} + 1 > 2 * n_tokens + 65536)
      throw ConfigError("tokenizer", strcat(origin, ": largest token id ", max_id, " is far beyond the ", n_tokens,
                                            " tokens defined (ids must be dense)"));
    impl->id_text.assign(static_cast<size_t>(max_id + 1), {});
    impl->id_bytes.assign(static_cast<size_t>(max_id + 1), {});
    impl->id_valid.assign(static_cast<size_t>(max_id + 1), 0);
    for (auto& [id, s] : id_tok) {
      if (!impl->byte_level_decoder || !uni::byte_level_to_bytes(s, impl->id_bytes[id])) impl->id_bytes[id] = s;
      impl->id_text[id] = std::move(s);
      impl->id_valid[id] = 1;
    }
    for (const AddedToken& t : impl->added) {
      const std::string& raw = at[impl->added_index[t.id]]["content"].get_ref<const std::string&>();
      impl->id_text[t.id] = raw;
      impl->id_bytes[t.id] = raw;
      impl->id_valid[t.id] = 1;
    }

    // Post-processor: TemplateProcessing "single" (optionally inside a Sequence); ByteLevel is a no-op.
    std::function<void(const json&)> post = [&](const json& p) {
      if (p.is_null()) return;
      const std::string ptype = p.value("type", "");
      if (ptype == "ByteLevel") return;
      if (ptype == "Sequence") {
        for (const auto& sub : p.value("processors", json::array())) post(sub);
        return;
      }
      if (ptype != "TemplateProcessing")
        throw UnsupportedError("tokenizer", strcat(origin, ": post_processor type \"", ptype,
                                                   "\" is not supported (supported: ByteLevel, TemplateProcessing, Sequence)"));
      const json& single = require(p, "single", origin + " post_processor");
      const json specials = p.value("special_tokens", json::object());
      bool seen_seq = false;
      for (const auto& piece : single) {
        if (piece.contains("Sequence")) {
          seen_seq = true;
          continue;
        }
        if (!piece.contains("SpecialToken"))
          throw ConfigError("tokenizer", strcat(origin, ": post_processor.single: expected Sequence or SpecialToken items"));
        const std::string name = piece["SpecialToken"].value("id", "");
        if (!specials.contains(name))
          throw ConfigError("tokenizer", strcat(origin, ": post_processor special token \"", name, "\" not in special_tokens"));
        for (const auto& id : specials[name].value("ids", json::array())) {
          if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > max_id)
            throw ConfigError("tokenizer", strcat(origin, ": post_processor special token \"", name, "\": id ",
                                                  id.dump(), " is not in the vocabulary [0, ", max_id, "]"));
          (seen_seq ? impl->suffix_ids : impl->prefix_ids).push_back(id.get<int32_t>());
        }
      }
    };
    post(j.value("post_processor", json()));

    impl->model = std::make_unique<BpeModel>(std::move(vocab), merges, ignore_merges, unk_id);
  } catch (const json::exception& e) {
    throw ConfigError("tokenizer", strcat(origin, ": unexpected value type: ", e.what()));
  }
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const size_t bad = uni::find_invalid_utf8(text);
  if (bad != std::string_view::npos)
    throw ValueError("tokenizer", strcat("encode: input is not valid UTF-8 (byte offset ", bad, ", byte 0x",
                                         std::hex, static_cast<int>(static_cast<unsigned char>(text[bad])), ")"));
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_special_tokens) ids = impl_->prefix_ids;
  std::vector<Impl::Section> sections;
  impl_->split_added(text, impl_->raw_first, sections);
  for (const auto& s : sections) {
    if (s.added_id >= 0) ids.push_back(s.added_id);
    else impl_->encode_plain(s.text, ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), impl_->suffix_ids.begin(), impl_->suffix_ids.end());
  return ids;
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_valid.size() || !impl_->id_valid[id])
    throw ValueError("tokenizer", strcat("decode: token id ", id, " is not in the vocabulary (size ", vocab_size(), ")"));
  return impl_->id_bytes[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string out, run;
  for (int32_t id : ids) {
    const std::string& b = token_bytes(id);
    if (skip_special_tokens && impl_->special_ids.count(id)) continue;
    if (!impl_->byte_level_decoder) {
      if (!out.empty() || !run.empty()) run += ' ';
      run += impl_->id_text[id];
      continue;
    }
    if (impl_->added_index.count(id)) {  // added tokens are emitted verbatim, not byte-decoded
      out += uni::lossy_utf8(run);
      run.clear();
      out += b;
    } else {
      run += b;
    }
  }
  out += impl_->byte_level_decoder ? uni::lossy_utf8(run) : run;
  return impl_->clean_up ? clean_up_tokenization(out) : out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto a = impl_->added_by_content.find(std::string(token));
  if (a != impl_->added_by_content.end()) return a->second;
  std::string bytes;
  if (uni::byte_level_to_bytes(token, bytes)) {
    auto it = impl_->model->vocab().find(bytes);
    if (it != impl_->model->vocab().end()) return it->second;
  }
  return std::nullopt;
}

std::string Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_text.size()) return {};
  return impl_->id_text[id];
}
bool Tokenizer::is_special(int32_t id) const { return impl_->special_ids.count(id) != 0; }
bool Tokenizer::is_added(int32_t id) const { return impl_->added_index.count(id) != 0; }
int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_text.size()); }
const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added; }
bool Tokenizer::clean_up_tokenization_spaces() const { return impl_->clean_up; }
void Tokenizer::set_clean_up_tokenization_spaces(bool on) { impl_->clean_up = on; }
void Tokenizer::mark_special(std::string_view token) {
  auto it = impl_->added_by_content.find(std::string(token));
  if (it != impl_->added_by_content.end()) impl_->special_ids.insert(it->second);
}

std::string clean_up_tokenization(std::string_view s) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  std::string cur(s);
  for (const auto& [from, to] : kRules) {  // sequential global replaces, like the JS/Python code
    std::string next;
    next.reserve(cur.size());
    size_t pos = 0;
    for (size_t f = cur.find(from); f != std::string::npos; f = cur.find(from, pos)) {
      next.append(cur, pos, f - pos);
      next.append(to);
      pos = f + from.size();
    }
    next.append(cur, pos, std::string::npos);
    cur.swap(next);
  }
  return cur;
}

std::string StreamDecoder::push(int32_t id) {
  const std::string& b = tok_.token_bytes(id);
  if (skip_special_ && tok_.is_special(id)) return {};
  if (tok_.is_added(id)) {  // verbatim: flush what is held back first, as decode() does
    std::string out = uni::lossy_utf8(pending_);
    pending_.clear();
    return out + b;
  }
  pending_ += b;
  const size_t n = uni::complete_utf8_prefix(pending_);
  std::string out = uni::lossy_utf8(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out = uni::lossy_utf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace trinity::tok
