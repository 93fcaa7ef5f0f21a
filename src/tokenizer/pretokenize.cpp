// Normalizers and pre-tokenizers (see pretokenize.h). Split semantics follow HF tokenizers'
// SplitDelimiterBehavior: matches and the gaps between them become pieces, empty pieces drop out.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_limits.h"

namespace trinity::tok {

using json = nlohmann::json;

namespace {

// Oniguruma's \s is Unicode White_Space, which includes U+0085; PCRE2's UCP \s does not.
std::string translate_pattern(const std::string& p) {
  std::string out;
  int class_depth = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == 's') out += class_depth ? "\\s\\x{85}" : "[\\s\\x{85}]";
      else if (n == 'S' && !class_depth) out += "[^\\s\\x{85}]";
      else out.append(p, i, 2);
      ++i;
      continue;
    }
    if (c == '[') ++class_depth;
    else if (c == ']' && class_depth) --class_depth;
    out += c;
  }
  return out;
}

std::string regex_error(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof(buf));
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

Regex::Regex(const std::string& pattern) : impl_(std::make_unique<Impl>()) {
  const std::string p = translate_pattern(pattern);
  int err = 0;
  PCRE2_SIZE off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (!impl_->code)
    throw ConfigError("tokenizer", strcat("pre_tokenizer regex does not compile at offset ", off, ": ",
                                          regex_error(err), " (pattern: ", pattern, ")"));
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;

void Regex::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  struct MatchData {
    pcre2_match_data* md;
    ~MatchData() { pcre2_match_data_free(md); }
  } md{pcre2_match_data_create_from_pattern(impl_->code, nullptr)};
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t pos = 0;
  while (pos <= s.size()) {
    const int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, s.size(), pos, 0, md.md, nullptr)
                              : pcre2_match(impl_->code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK,
                                            md.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw ValueError("tokenizer", strcat("regex match failed: ", regex_error(rc)));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.md);
    const size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: skip one code point, never emit it
      if (b >= s.size()) break;
      pos = b + 1;
      while (pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    out.emplace_back(b, e);
    pos = e;
  }
}

namespace {

// Splits each piece into matches/gaps and recombines per behavior.
void split_pieces(std::vector<std::string>& pieces, SplitBehavior behavior, bool invert,
                  const std::function<void(std::string_view, std::vector<std::pair<size_t, size_t>>&)>& find) {
  std::vector<std::string> out;
  out.reserve(pieces.size() * 2);
  std::vector<std::pair<size_t, size_t>> m;
  struct Part { size_t b, e; bool match; };
  std::vector<Part> parts;
  for (const std::string& s : pieces) {
    m.clear();
    parts.clear();
    find(s, m);
    size_t prev = 0;
    for (auto [b, e] : m) {
      if (b > prev) parts.push_back({prev, b, invert});
      parts.push_back({b, e, !invert});
      prev = e;
    }
    if (prev < s.size()) parts.push_back({prev, s.size(), invert});
    const size_t first_out = out.size();
    switch (behavior) {
      case SplitBehavior::Removed:
        for (const auto& p : parts)
          if (!p.match) out.emplace_back(s, p.b, p.e - p.b);
        break;
      case SplitBehavior::Isolated:
        for (const auto& p : parts) out.emplace_back(s, p.b, p.e - p.b);
        break;
      case SplitBehavior::MergedWithPrevious: {
        bool prev_gap = false;
        for (const auto& p : parts) {
          if (p.match && out.size() > first_out && prev_gap) out.back().append(s, p.b, p.e - p.b);
          else out.emplace_back(s, p.b, p.e - p.b);
          prev_gap = !p.match;
        }
        break;
      }
      case SplitBehavior::MergedWithNext: {
        bool pending = false;
        for (const auto& p : parts) {
          if (pending) out.back().append(s, p.b, p.e - p.b);
          else out.emplace_back(s, p.b, p.e - p.b);
          pending = p.match;
        }
        break;
      }
      case SplitBehavior::Contiguous: {
        bool prev_match = false;
        for (const auto& p : parts) {
          if (p.match && prev_match && out.size() > first_out) out.back().append(s, p.b, p.e - p.b);
          else out.emplace_back(s, p.b, p.e - p.b);
          prev_match = p.match;
        }
        break;
      }
    }
  }
  pieces.swap(out);
}

class SplitStep : public PreTokenizerStep {
 public:
  SplitStep(std::unique_ptr<Regex> re, std::string literal, SplitBehavior b, bool invert)
      : re_(std::move(re)), literal_(std::move(literal)), behavior_(b), invert_(invert) {}
  void apply(std::vector<std::string>& pieces) const override {
    split_pieces(pieces, behavior_, invert_, [this](std::string_view s, auto& out) {
      if (re_) return re_->find_all(s, out);
      if (literal_.empty()) return;
      for (size_t p = s.find(literal_); p != std::string_view::npos; p = s.find(literal_, p + literal_.size()))
        out.emplace_back(p, p + literal_.size());
    });
  }

 private:
  std::unique_ptr<Regex> re_;
  std::string literal_;
  SplitBehavior behavior_;
  bool invert_;
};

// GPT-2's pattern, used by ByteLevel when use_regex is true.
const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

class ByteLevelStep : public PreTokenizerStep {
 public:
  ByteLevelStep(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), re_(use_regex ? std::make_unique<Regex>(kGpt2Pattern) : nullptr) {}
  void apply(std::vector<std::string>& pieces) const override {
    if (add_prefix_space_)
      for (auto& p : pieces)
        if (p.empty() || p[0] != ' ') p.insert(p.begin(), ' ');
    if (re_)
      split_pieces(pieces, SplitBehavior::Isolated, false,
                   [this](std::string_view s, auto& out) { re_->find_all(s, out); });
    // The byte -> char mapping itself is done by the BPE model, which works on raw bytes.
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> re_;
};

class DigitsStep : public PreTokenizerStep {
 public:
  explicit DigitsStep(bool individual) : re_(individual ? "\\p{N}" : "\\p{N}+") {}
  void apply(std::vector<std::string>& pieces) const override {
    split_pieces(pieces, SplitBehavior::Isolated, false,
                 [this](std::string_view s, auto& out) { re_.find_all(s, out); });
  }

 private:
  Regex re_;
};

const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw ConfigError("tokenizer", strcat(where, ": missing field \"", key, "\""));
  return j.at(key);
}

bool bool_or(const json& j, const char* key, bool def) {
  if (!j.contains(key) || j.at(key).is_null()) return def;
  if (!j.at(key).is_boolean())
    throw ConfigError("tokenizer", strcat("pre_tokenizer field \"", key, "\": expected a boolean"));
  return j.at(key).get<bool>();
}

SplitBehavior parse_behavior(const std::string& s) {
  if (s == "Removed") return SplitBehavior::Removed;
  if (s == "Isolated") return SplitBehavior::Isolated;
  if (s == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (s == "Contiguous") return SplitBehavior::Contiguous;
  throw ConfigError("tokenizer", strcat("pre_tokenizer Split: unknown behavior \"", s,
                                        "\" (expected Removed, Isolated, MergedWithPrevious, "
                                        "MergedWithNext or Contiguous)"));
}

void build(const json& j, std::vector<std::unique_ptr<PreTokenizerStep>>& steps, bool& has_byte_level) {
  if (j.is_null()) return;
  const std::string where = "pre_tokenizer";
  const json& tj = field(j, "type", where);
  if (!tj.is_string()) throw ConfigError("tokenizer", "pre_tokenizer.type: expected a string");
  const std::string type = tj.get<std::string>();
  if (type == "Sequence") {
    const json& list = field(j, "pretokenizers", "pre_tokenizer Sequence");
    if (!list.is_array()) throw ConfigError("tokenizer", "pre_tokenizer Sequence.pretokenizers: expected a list");
    for (const auto& sub : list) build(sub, steps, has_byte_level);
  } else if (type == "Split") {
    const json& pat = field(j, "pattern", "pre_tokenizer Split");
    std::unique_ptr<Regex> re;
    std::string literal;
    if (pat.is_object() && pat.contains("Regex") && pat["Regex"].is_string()) {
      re = std::make_unique<Regex>(pat["Regex"].get<std::string>());
    } else if (pat.is_object() && pat.contains("String") && pat["String"].is_string()) {
      literal = pat["String"].get<std::string>();
    } else {
      throw ConfigError("tokenizer", "pre_tokenizer Split.pattern: expected {\"Regex\": str} or {\"String\": str}");
    }
    const json& bj = field(j, "behavior", "pre_tokenizer Split");
    if (!bj.is_string()) throw ConfigError("tokenizer", "pre_tokenizer Split.behavior: expected a string");
    steps.push_back(std::make_unique<SplitStep>(std::move(re), literal, parse_behavior(bj.get<std::string>()),
                                                bool_or(j, "invert", false)));
  } else if (type == "ByteLevel") {
    has_byte_level = true;
    steps.push_back(std::make_unique<ByteLevelStep>(bool_or(j, "add_prefix_space", false),
                                                    bool_or(j, "use_regex", true)));
  } else if (type == "Digits") {
    steps.push_back(std::make_unique<DigitsStep>(bool_or(j, "individual_digits", false)));
  } else {
    throw UnsupportedError("tokenizer", strcat("pre_tokenizer type \"", type,
                                               "\" is not supported (supported: Sequence, Split, ByteLevel, Digits)"));
  }
}

void collect_norm(const json& j, Normalization& n) {
  if (j.is_null()) return;
  const json& tj = field(j, "type", "normalizer");
  if (!tj.is_string()) throw ConfigError("tokenizer", "normalizer.type: expected a string");
  const std::string type = tj.get<std::string>();
  if (type == "Sequence") {
    const json& list = field(j, "normalizers", "normalizer Sequence");
    if (!list.is_array()) throw ConfigError("tokenizer", "normalizer Sequence.normalizers: expected a list");
    for (const auto& sub : list) collect_norm(sub, n);
  } else if (type == "NFC") {
    n = Normalization::NFC;
  } else {
    throw UnsupportedError("tokenizer", strcat("normalizer type \"", type,
                                               "\" is not supported (supported: NFC, Sequence, null)"));
  }
}

json parse(const std::string& text, const char* what) {
  check_json_depth(text, what, kMaxJsonDepth, "tokenizer");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError("tokenizer", strcat(what, ": invalid JSON: ", e.what()));
  }
}

}  // namespace

std::vector<std::unique_ptr<PreTokenizerStep>> make_pre_tokenizer(const std::string& text, bool& has_byte_level) {
  std::vector<std::unique_ptr<PreTokenizerStep>> steps;
  has_byte_level = false;
  build(parse(text, "pre_tokenizer"), steps, has_byte_level);
  return steps;
}

Normalization make_normalizer(const std::string& text) {
  Normalization n = Normalization::None;
  collect_norm(parse(text, "normalizer"), n);
  return n;
}

}  // namespace trinity::tok
