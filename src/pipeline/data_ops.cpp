// The data operator registry (data_ops.h), argument parsing (data_ops_internal.h) and the operators
// that need no text statistics: length and token count bounds, regex patterns, JSON validity and
// exact deduplication. Repetition / character-class filters live in data_ops_text.cpp, MinHash in
// minhash.cpp.
#include "pipeline/data_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <regex>
#include <unordered_set>

#include "core/error.h"
#include "core/names.h"
#include "core/text.h"
#include "pipeline/data_ops_internal.h"
#include "pipeline/unicode_text.h"

namespace trinity::pipeline {

using json = nlohmann::json;

OpArgs::OpArgs(std::string op, const std::string& args_json, std::vector<std::string> accepted) : op_(std::move(op)) {
  try {
    a_ = json::parse(args_json.empty() ? "{}" : args_json);
  } catch (const json::exception& e) {
    throw ConfigError("pipeline", strcat("data operator '", op_, "': args are not valid JSON: ", e.what()));
  }
  if (a_.is_null()) a_ = json::object();
  if (!a_.is_object())
    throw ConfigError("pipeline", strcat("data operator '", op_, "': args must be a mapping, got ", a_.dump()));
  for (const auto& [k, v] : a_.items())
    if (std::find(accepted.begin(), accepted.end(), k) == accepted.end())
      throw ConfigError("pipeline", strcat("data operator '", op_, "': unknown argument '", k, "'",
                                           did_you_mean_suffix(k, accepted), "; accepted: ", join_names(accepted)));
}

bool OpArgs::has(const std::string& key) const {
  return a_.contains(key) && !a_[key].is_null();
}

void OpArgs::fail(const std::string& key, const std::string& expected) const {
  throw ConfigError("pipeline", strcat("data operator '", op_, "': ", key, " must be ", expected, ", got ",
                                       a_.contains(key) ? a_[key].dump() : "nothing"));
}

double OpArgs::number(const std::string& key, double def) const {
  if (!has(key)) return def;
  if (!a_[key].is_number()) fail(key, "a number");
  return a_[key].get<double>();
}

double OpArgs::ratio(const std::string& key, double def) const {
  if (!has(key)) return def;
  const json& v = a_[key];
  if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() <= 1.0)) fail(key, "a number in [0, 1]");
  return v.get<double>();
}

int64_t OpArgs::integer(const std::string& key, int64_t def, int64_t min) const {
  if (!has(key)) return def;
  const json& v = a_[key];
  const std::string expected = strcat("an integer >= ", min);
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail(key, expected);
    x = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(std::trunc(d) == d && std::fabs(d) < 9e18)) fail(key, expected);
    x = static_cast<int64_t>(d);
  } else {
    fail(key, expected);
  }
  if (x < min) fail(key, expected);
  return x;
}

bool OpArgs::boolean(const std::string& key, bool def) const {
  if (!has(key)) return def;
  if (!a_[key].is_boolean()) fail(key, "true or false");
  return a_[key].get<bool>();
}

std::string OpArgs::string(const std::string& key, const std::string& def) const {
  if (!has(key)) return def;
  if (!a_[key].is_string()) fail(key, "a text");
  return a_[key].get<std::string>();
}

std::vector<std::string> OpArgs::strings(const std::string& key) const {
  if (!has(key)) return {};
  const json& v = a_[key];
  if (!v.is_array()) fail(key, "a list of texts");
  std::vector<std::string> out;
  for (const auto& x : v) {
    if (!x.is_string()) fail(key, "a list of texts");
    out.push_back(x.get<std::string>());
  }
  return out;
}

DataOpResult filter_result(std::vector<char> keep) {
  const auto dropped = std::count(keep.begin(), keep.end(), 0);
  DataOpResult r{std::move(keep), {}};
  r.metrics["filtered_count"] = static_cast<double>(dropped);
  return r;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Keeps rows whose predicate holds; the predicate sees the row and its index.
class PredicateFilter : public DataOp {
 public:
  using Pred = std::function<bool(const DataRow&, size_t)>;
  explicit PredicateFilter(Pred pred) : pred_(std::move(pred)) {}
  DataOpResult apply(const std::vector<DataRow>& rows) override {
    std::vector<char> keep(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) keep[i] = pred_(rows[i], i) ? 1 : 0;
    return filter_result(std::move(keep));
  }

 private:
  Pred pred_;
};

std::unique_ptr<DataOp> make_text_length_filter(const OpArgs& a) {
  const double lo = a.number("min_len", 10), hi = a.number("max_len", kInf);
  return std::make_unique<PredicateFilter>([lo, hi](const DataRow& r, size_t) {
    const auto n = static_cast<double>(count_code_points(r.text));
    return lo <= n && n <= hi;
  });
}

std::unique_ptr<DataOp> make_token_num_filter(const OpArgs& a) {
  const double lo = a.number("min_num", 10), hi = a.number("max_num", kInf);
  return std::make_unique<PredicateFilter>([lo, hi](const DataRow& r, size_t i) {
    if (r.tokens < 0)
      throw ValueError("pipeline", strcat("token_num_filter: the token count of row ", i,
                                          " is unknown for this input (the caller must supply DataRow::tokens)"));
    const auto n = static_cast<double>(r.tokens);
    return lo <= n && n <= hi;
  });
}

std::unique_ptr<DataOp> make_text_pattern_filter(const OpArgs& a) {
  if (!a.has("pattern")) a.fail("pattern", "a regular expression (ECMAScript); it is required");
  const std::string pattern = a.string("pattern", "");
  const std::string mode = a.string("mode", "search");
  if (mode != "search" && mode != "full") a.fail("mode", "'search' or 'full'");
  const bool full = mode == "full", keep_matching = a.boolean("keep_matching", true);
  auto re = std::make_shared<std::regex>();
  try {
    *re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ConfigError("pipeline", strcat("data operator 'text_pattern_filter': pattern '", pattern,
                                         "' is not a valid ECMAScript regular expression: ", e.what()));
  }
  return std::make_unique<PredicateFilter>([re, pattern, full, keep_matching](const DataRow& r, size_t i) {
    const char* b = r.text.data();
    const char* e = b + r.text.size();
    bool match = false;
    try {
      match = full ? std::regex_match(b, e, *re) : std::regex_search(b, e, *re);
    } catch (const std::regex_error& err) {  // error_complexity / error_stack on a long row
      throw ValueError("pipeline", strcat("text_pattern_filter: pattern '", pattern, "' failed on row ", i, " (",
                                          r.text.size(), " bytes): ", err.what()));
    }
    return match == keep_matching;
  });
}

// The body of a ```json ... ``` (or ``` ... ```) fence, or the trimmed text when it is not fenced.
std::string_view strip_fence(std::string_view s) {
  s = trim_view(s);
  if (s.size() < 6 || s.substr(0, 3) != "```" || s.substr(s.size() - 3) != "```") return s;
  std::string_view body = s.substr(3, s.size() - 6);
  if (body.size() >= 4) {
    std::string tag(body.substr(0, 4));
    std::transform(tag.begin(), tag.end(), tag.begin(), [](char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; });
    if (tag == "json" && (body.size() == 4 || is_ascii_space(body[4]))) body.remove_prefix(4);
  }
  return body;
}

std::unique_ptr<DataOp> make_json_format_filter(const OpArgs& a) {
  const std::vector<std::string> keys = a.strings("required_keys");
  const bool object = a.boolean("require_object", false) || !keys.empty();
  return std::make_unique<PredicateFilter>([keys, object](const DataRow& r, size_t) {
    const std::string_view body = strip_fence(r.text);
    if (!object) return json::accept(body.begin(), body.end());
    const json v = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (!v.is_object()) return false;  // also a discarded (invalid) value
    return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return v.contains(k); });
  });
}

// Exact duplicates by text; the normalised text is the hash key (an unordered_set compares the
// texts on a hash match, so there are no false duplicates).
class DocumentDeduplicator : public DataOp {
 public:
  DocumentDeduplicator(bool lowercase, bool ignore_non_character)
      : lowercase_(lowercase), ignore_non_character_(ignore_non_character) {}

  DataOpResult apply(const std::vector<DataRow>& rows) override {
    std::vector<std::string> norm;  // normalised texts, when normalising
    if (lowercase_ || ignore_non_character_) {
      norm.reserve(rows.size());
      for (const auto& r : rows) norm.push_back(normalise(r.text));
    }
    std::unordered_set<std::string_view> seen;
    std::vector<char> keep(rows.size());
    for (size_t i = 0; i < rows.size(); ++i)
      keep[i] = seen.insert(norm.empty() ? trim_spaces(rows[i].text) : std::string_view(norm[i])).second ? 1 : 0;
    DataOpResult res = filter_result(std::move(keep));
    res.metrics["duplicate_count"] = res.metrics["filtered_count"];
    return res;
  }

 private:
  // Strips leading / trailing code points of class kSpace (Python's str.strip()).
  static std::string_view trim_spaces(std::string_view s) {
    size_t b = 0, e = 0;
    bool found = false;
    for (size_t i = 0; i < s.size();) {
      const size_t at = i;
      if (classify(next_code_point(s, i)).kind == CharKind::kSpace) continue;
      if (!found) b = at;
      found = true;
      e = i;
    }
    return found ? s.substr(b, e - b) : std::string_view();
  }

  std::string normalise(std::string_view text) const {
    std::string s = lowercase_ ? fold_case(text) : std::string(text);
    if (ignore_non_character_) {
      std::string out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        const size_t at = i;
        const uint32_t cp = next_code_point(s, i);
        const CharKind k = classify(cp).kind;
        const bool punct = cp < 0x80 && k == CharKind::kOther && cp > 0x20 && cp < 0x7F;
        if (k != CharKind::kSpace && k != CharKind::kDigit && !punct) out.append(s, at, i - at);
      }
      s = std::move(out);
    }
    return std::string(trim_spaces(s));
  }

  bool lowercase_, ignore_non_character_;
};

struct Entry {
  std::vector<std::string> accepted;
  std::function<std::unique_ptr<DataOp>(const OpArgs&)> make;
};

const std::map<std::string, Entry>& registry() {
  static const std::map<std::string, Entry> r = {
      {"text_length_filter", {{"min_len", "max_len"}, make_text_length_filter}},
      {"token_num_filter", {{"min_num", "max_num"}, make_token_num_filter}},
      {"character_repetition_filter", {{"rep_len", "min_ratio", "max_ratio"}, make_character_repetition_filter}},
      {"word_repetition_filter", {{"rep_len", "min_ratio", "max_ratio"}, make_word_repetition_filter}},
      {"special_characters_filter", {{"min_ratio", "max_ratio"}, make_special_characters_filter}},
      {"script_ratio_filter", {{"script", "min_ratio"}, make_script_ratio_filter}},
      {"document_deduplicator",
       {{"lowercase", "ignore_non_character"},
        [](const OpArgs& a) {
          return std::make_unique<DocumentDeduplicator>(a.boolean("lowercase", false),
                                                        a.boolean("ignore_non_character", false));
        }}},
      {"document_minhash_deduplicator",
       {{"num_permutations", "jaccard_threshold", "ngram_size", "num_bands", "num_rows_per_band", "lowercase", "seed"},
        make_minhash_deduplicator}},
      {"text_pattern_filter", {{"pattern", "mode", "keep_matching"}, make_text_pattern_filter}},
      {"json_format_filter", {{"require_object", "required_keys"}, make_json_format_filter}},
  };
  return r;
}

}  // namespace

std::vector<std::string> data_op_names() {
  std::vector<std::string> n;
  for (const auto& [k, e] : registry()) n.push_back(k);
  return n;
}

bool is_data_op(const std::string& name) {
  return registry().count(name) > 0;
}

std::unique_ptr<DataOp> make_data_op(const std::string& name, const std::string& args_json) {
  const auto it = registry().find(name);
  if (it == registry().end()) throw_unknown_name("pipeline", "data operator", name, data_op_names());
  return it->second.make(OpArgs(name, args_json, it->second.accepted));
}

}  // namespace trinity::pipeline
