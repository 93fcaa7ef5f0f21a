// Text-statistic filters (data_ops.h): Data-Juicer's character / word n-gram repetition ratios,
// the special-character ratio and the script ratio, each a per-row ratio kept in a range. N-grams are
// counted by their exact bytes (a code point n-gram is a byte substring, a word n-gram a substring of
// the single-space-joined lowercased words), so a hash collision never merges two n-grams.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "core/error.h"
#include "core/names.h"
#include "pipeline/data_ops_internal.h"
#include "pipeline/unicode_text.h"

namespace trinity::pipeline {

namespace {

// Keeps rows whose ratio lies in [lo, hi].
class RatioFilter : public DataOp {
 public:
  using Ratio = std::function<double(std::string_view)>;
  RatioFilter(Ratio ratio, double lo, double hi) : ratio_(std::move(ratio)), lo_(lo), hi_(hi) {}
  DataOpResult apply(const std::vector<DataRow>& rows) override {
    std::vector<char> keep(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const double r = ratio_(rows[i].text);
      keep[i] = lo_ <= r && r <= hi_ ? 1 : 0;
    }
    return filter_result(std::move(keep));
  }

 private:
  Ratio ratio_;
  double lo_, hi_;
};

// Counts of the distinct n-grams; gram(i) is the i-th of m n-grams. Sorting (hash, text) pairs
// groups equal n-grams without a node per n-gram; equal hashes fall back to comparing the text.
template <typename Gram>
std::vector<size_t> ngram_counts(size_t m, Gram gram) {
  std::vector<std::pair<size_t, std::string_view>> g(m);
  for (size_t i = 0; i < m; ++i) g[i] = {std::hash<std::string_view>()(gram(i)), gram(i)};
  std::sort(g.begin(), g.end());
  std::vector<size_t> c;
  for (size_t s = 0, e = 0; s < m; s = e) {
    for (e = s + 1; e < m && g[e] == g[s];) ++e;
    c.push_back(e - s);
  }
  return c;
}

size_t isqrt(size_t n) {
  auto r = static_cast<size_t>(std::sqrt(static_cast<double>(n)));
  while (r * r > n) --r;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}

// Data-Juicer char_rep_ratio over code point n-grams.
double char_repetition_ratio(std::string_view text, size_t n) {
  std::vector<size_t> off;  // byte offset of every code point, then the end
  off.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    off.push_back(i);
    next_code_point(text, i);
  }
  off.push_back(text.size());
  const size_t cps = off.size() - 1;
  if (cps < n) return 0.0;
  std::vector<size_t> c = ngram_counts(cps - n + 1, [&](size_t i) { return text.substr(off[i], off[i + n] - off[i]); });
  std::sort(c.begin(), c.end(), std::greater<>());
  const size_t repeated = static_cast<size_t>(std::count_if(c.begin(), c.end(), [](size_t x) { return x > 1; }));
  const size_t k = std::min(isqrt(c.size()), repeated);
  size_t top = 0, total = 0;
  for (size_t i = 0; i < c.size(); ++i) (i < k ? top : total) += c[i];
  total += top;
  return total ? static_cast<double>(top) / static_cast<double>(total) : 0.0;
}

// Data-Juicer word_rep_ratio over whitespace-split, lowercased words.
double word_repetition_ratio(std::string_view text, size_t n) {
  const std::string folded = fold_case(text);
  const std::vector<std::string_view> words = split_words(folded);
  if (words.size() < n) return 0.0;
  std::string joined;  // words joined by one space; begin[i] / end[i] locate word i in it
  std::vector<size_t> begin, end;
  for (const auto w : words) {
    if (!joined.empty()) joined.push_back(' ');
    begin.push_back(joined.size());
    joined.append(w);
    end.push_back(joined.size());
  }
  const std::string_view j(joined);
  const std::vector<size_t> c =
      ngram_counts(words.size() - n + 1, [&](size_t i) { return j.substr(begin[i], end[i + n - 1] - begin[i]); });
  size_t rep = 0, total = 0;
  for (size_t x : c) {
    total += x;
    if (x > 1) rep += x;
  }
  return total ? static_cast<double>(rep) / static_cast<double>(total) : 0.0;
}

double special_characters_ratio(std::string_view text) {
  size_t n = 0, special = 0;
  for (size_t i = 0; i < text.size(); ++n)
    if (classify(next_code_point(text, i)).kind == CharKind::kOther) ++special;
  return n ? static_cast<double>(special) / static_cast<double>(n) : 0.0;
}

double script_ratio(std::string_view text, Script script) {
  size_t letters = 0, in_script = 0;
  for (size_t i = 0; i < text.size();) {
    const CharClass c = classify(next_code_point(text, i));
    if (c.kind != CharKind::kLetter) continue;
    ++letters;
    if (c.script == script) ++in_script;
  }
  return letters ? static_cast<double>(in_script) / static_cast<double>(letters) : 0.0;
}

struct RatioArgs {
  double lo, hi;
};

RatioArgs ratio_range(const OpArgs& a, double def_lo, double def_hi) {
  const double lo = a.number("min_ratio", def_lo), hi = a.number("max_ratio", def_hi);
  if (lo > hi) a.fail("min_ratio", strcat("<= max_ratio (", hi, ")"));
  return {lo, hi};
}

}  // namespace

std::unique_ptr<DataOp> make_character_repetition_filter(const OpArgs& a) {
  const auto n = static_cast<size_t>(a.integer("rep_len", 10, 1));
  const RatioArgs r = ratio_range(a, 0.0, 0.5);
  return std::make_unique<RatioFilter>([n](std::string_view t) { return char_repetition_ratio(t, n); }, r.lo, r.hi);
}

std::unique_ptr<DataOp> make_word_repetition_filter(const OpArgs& a) {
  const auto n = static_cast<size_t>(a.integer("rep_len", 10, 1));
  const RatioArgs r = ratio_range(a, 0.0, 0.5);
  return std::make_unique<RatioFilter>([n](std::string_view t) { return word_repetition_ratio(t, n); }, r.lo, r.hi);
}

std::unique_ptr<DataOp> make_special_characters_filter(const OpArgs& a) {
  const RatioArgs r = ratio_range(a, 0.0, 0.25);
  return std::make_unique<RatioFilter>(special_characters_ratio, r.lo, r.hi);
}

std::unique_ptr<DataOp> make_script_ratio_filter(const OpArgs& a) {
  static const std::vector<std::pair<std::string, Script>> kScripts = {
      {"latin", Script::kLatin},           {"cjk", Script::kCjk},     {"cyrillic", Script::kCyrillic},
      {"arabic", Script::kArabic},         {"greek", Script::kGreek}, {"hebrew", Script::kHebrew},
      {"devanagari", Script::kDevanagari}, {"thai", Script::kThai}};
  const std::string name = a.string("script", "latin");
  const auto it = std::find_if(kScripts.begin(), kScripts.end(), [&](const auto& s) { return s.first == name; });
  if (it == kScripts.end()) {
    std::vector<std::string> names;
    for (const auto& s : kScripts) names.push_back(s.first);
    a.fail("script", strcat("one of ", join_names(names), did_you_mean_suffix(name, names)));
  }
  const Script script = it->second;
  const double lo = a.number("min_ratio", 0.5);
  return std::make_unique<RatioFilter>([script](std::string_view t) { return script_ratio(t, script); }, lo,
                                       std::numeric_limits<double>::infinity());
}

}  // namespace trinity::pipeline
