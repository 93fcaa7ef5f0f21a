// Normalizers and pre-tokenizers of HF tokenizer.json (internal). A pre-tokenizer turns a section
// of text (no added tokens inside) into pieces that the BPE model encodes independently.
// Supported: normalizers NFC / Sequence / null; pre-tokenizers Split (Regex or String pattern, all
// five split behaviors, invert), ByteLevel (add_prefix_space, use_regex), Digits, Sequence.
// Regexes run on PCRE2 (UTF + UCP, JIT) after translating Oniguruma's \s (which includes U+0085).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trinity::tok {

// A compiled Unicode regex (PCRE2). Thread-safe for concurrent matching.
class Regex {
 public:
  explicit Regex(const std::string& oniguruma_pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  // Appends the [start, end) byte ranges of all non-overlapping matches in s (valid UTF-8).
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// One step of a pre-tokenizer pipeline; `pieces` is rewritten in place.
class PreTokenizerStep {
 public:
  virtual ~PreTokenizerStep() = default;
  virtual void apply(std::vector<std::string>& pieces) const = 0;
};

// Builds the pipeline from the tokenizer.json "pre_tokenizer" value given as JSON text ("null" for
// none). Throws UnsupportedError naming an unknown "type", ConfigError for malformed fields.
// `has_byte_level` is set when a ByteLevel pre-tokenizer is present.
std::vector<std::unique_ptr<PreTokenizerStep>> make_pre_tokenizer(const std::string& json_text,
                                                                  bool& has_byte_level);

enum class Normalization { None, NFC };
// Parses the "normalizer" value (JSON text). Sequence of NFC collapses to NFC.
Normalization make_normalizer(const std::string& json_text);

}  // namespace trinity::tok
