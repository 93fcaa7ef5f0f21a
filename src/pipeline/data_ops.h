// Native row-level data operators: text filters and deduplicators over rows of text, shared by the
// experience pipeline (a response) and task pipelines (a prompt, a column). Names and args follow
// Data-Juicer's where one exists. Every operator reports filtered_count; keep one row iff 1.
// "Code points" are UTF-8 code points, an invalid byte counting as one (unicode_text.h), and
// letter / digit / space / script are the classes of unicode_text.h classify().
//   text_length_filter(min_len=10, max_len=inf)   min_len <= #code points <= max_len
//   token_num_filter(min_num=10, max_num=inf)     min_num <= DataRow::tokens <= max_num; a row with
//                                                 tokens == -1 is a ValueError
//   character_repetition_filter(rep_len=10, min_ratio=0, max_ratio=0.5)
//       Data-Juicer char_rep_ratio in [min_ratio, max_ratio]: counts c of the distinct code point
//       n-grams (n = rep_len), sorted descending; k = min(floor(sqrt(#distinct)), #(c > 1));
//       ratio = (sum of the k largest c) / (sum of all c); 0 when the text has < rep_len code points
//   word_repetition_filter(rep_len=10, min_ratio=0, max_ratio=0.5)
//       Data-Juicer word_rep_ratio in [min_ratio, max_ratio] over whitespace-split, lowercased words
//       (Data-Juicer also strips punctuation off words; we do not): ratio = (sum of counts > 1) /
//       (sum of all counts) of the word n-grams; 0 when there are < rep_len words
//   special_characters_filter(min_ratio=0, max_ratio=0.25)
//       #(code points that are not letter, digit or space) / #code points in [min_ratio, max_ratio];
//       0 for the empty text
//   script_ratio_filter(script="latin", min_ratio=0.5)
//       #(letters of `script`) / #letters >= min_ratio (0 when there are no letters); script is one of
//       latin, cjk (Han, Hiragana, Katakana, Hangul), cyrillic, arabic, greek, hebrew, devanagari, thai
//   document_deduplicator(lowercase=false, ignore_non_character=false)
//       exact duplicates of the text, leading/trailing spaces stripped, optionally lowercased and
//       with spaces, digits and ASCII punctuation removed; the first occurrence stays.
//       Metrics: filtered_count, duplicate_count
//   document_minhash_deduplicator(num_permutations=128, jaccard_threshold=0.7, ngram_size=5,
//       num_bands, num_rows_per_band, lowercase=true, seed=42)        near duplicates (minhash.h)
//       Metrics: filtered_count, duplicate_count
//   text_pattern_filter(pattern (required), mode="search"|"full", keep_matching=true)
//       keep rows where the ECMAScript regex matches (a substring / the whole text) == keep_matching
//   json_format_filter(require_object=false, required_keys=[])
//       keep rows whose text (optionally inside a ```json ... ``` fence) is one JSON value; an
//       object holding every required key when require_object or required_keys is set
// Operators are pure: a deduplicator compares the rows of one apply() call only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trinity::pipeline {

struct DataRow {
  std::string_view text;  // the text the operator looks at (a response, a prompt, a column)
  int64_t tokens = -1;    // token count when the caller knows it (experiences), else -1
};

struct DataOpResult {
  std::vector<char> keep;                 // one per row, 1 = keep
  std::map<std::string, double> metrics;  // unprefixed, e.g. "filtered_count"
};

class DataOp {
 public:
  virtual ~DataOp() = default;
  // Decides for every row; keeps no state between calls.
  virtual DataOpResult apply(const std::vector<DataRow>& rows) = 0;
};

// name: one of data_op_names(); args_json: a JSON object text ("{}" or "" = defaults). ConfigError
// for an unknown name (with the closest one) and for an unknown or ill-typed argument (naming the
// operator, argument, value and what was expected).
std::unique_ptr<DataOp> make_data_op(const std::string& name, const std::string& args_json);
std::vector<std::string> data_op_names();  // sorted
bool is_data_op(const std::string& name);

}  // namespace trinity::pipeline
