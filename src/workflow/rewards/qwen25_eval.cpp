// Qwen2.5-Math answer extraction, clean-up and comparison (see qwen25_eval.h). Each step mirrors one
// line of upstream's qwen25_eval.py, in its order; regexes are matched by hand (the inputs are model
// output) with Python's leftmost, non-overlapping re.sub / re.search semantics.
#include "workflow/rewards/qwen25_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "workflow/rewards/math_checker.h"
#include "workflow/rewards/py_json.h"

namespace trinity::workflow::qwen25 {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
// Python's \w on str, with every non-ASCII byte counted as a word character (most non-ASCII code
// points in answers are letters or digits).
bool is_word(char c) {
  return is_alpha(c) || is_digit(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string strip(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}
bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
void replace_all(std::string& s, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}
size_t count(std::string_view s, std::string_view t) {
  size_t n = 0, p = 0;
  while ((p = s.find(t, p)) != std::string::npos) ++n, p += t.size();
  return n;
}
std::vector<std::string> split(std::string_view s, std::string_view sep) {  // Python str.split(sep)
  std::vector<std::string> out;
  size_t p = 0, q;
  while ((q = s.find(sep, p)) != std::string::npos) {
    out.emplace_back(s.substr(p, q - p));
    p = q + sep.size();
  }
  out.emplace_back(s.substr(p));
  return out;
}

// re.sub(open + "(.*?)" + close, keep ? r"\1" : "", s) with literal open / close and no newlines.
std::string sub_lazy(const std::string& s, std::string_view open, std::string_view close, bool keep) {
  std::string out;
  size_t p = 0;
  while (true) {
    size_t a = s.find(open, p);
    if (a == std::string::npos) break;
    size_t b = s.find(close, a + open.size());
    if (b == std::string::npos) break;
    out.append(s, p, a - p);
    if (keep) out.append(s, a + open.size(), b - a - open.size());
    p = b + close.size();
  }
  out.append(s, p, std::string::npos);
  return out;
}

// Upstream's MathQA unit words (order and duplicates kept), then each + "s" unless it ends in "s".
const std::vector<std::string>& unit_texts() {
  static const std::vector<std::string> u = [] {
    std::vector<std::string> v = {
        "east",   "degree",  "mph",    "kmph",      "ft",       "m sqaure",     " m east", "sq m",    "deg",
        "mile",   "q .",     "monkey", "prime",     "ratio",    "profit of rs", "rd",      "o",       "gm",
        "p . m",  "lb",      "tile",   "per",       "dm",       "lt",           "gain",    "ab",      "way",
        "west",   "a .",     "b .",    "c .",       "d .",      "e .",          "f .",     "g .",     "h .",
        "t",      "a",       "h",      "no change", "men",      "soldier",      "pie",     "bc",      "excess",
        "st",     "inches",  "noon",   "percent",   "by",       "gal",          "kmh",     "c",       "acre",
        "rise",   "a . m",   "th",     "π r 2",     "sq",       "mark",         "l",       "toy",     "coin",
        "sq . m", "gallon",  "° f",    "profit",    "minw",     "yr",           "women",   "feet",    "am",
        "pm",     "hr",      "cu cm",  "square",    "v â € ™",  "are",          "rupee",   "rounds",  "cubic",
        "cc",     "mtr",     "s",      "ohm",       "number",   "kmph",         "day",     "hour",    "minute",
        "min",    "second",  "man",    "woman",     "sec",      "cube",         "mt",      "sq inch", "mp",
        "∏ cm ³", "hectare", "more",   "sec",       "unit",     "cu . m",       "cm 2",    "rs .",    "rs",
        "kg",     "g",       "month",  "km",        "m",        "cm",           "mm",      "apple",   "liter",
        "loss",   "yard",    "pure",   "year",      "increase", "decrease",     "d",       "less",    "Surface",
        "litre",  "pi sq m", "s .",    "metre",     "meter",    "inch"};
    const size_t n = v.size();
    for (size_t i = 0; i < n; ++i)
      if (!ends_with(v[i], "s")) v.push_back(v[i] + "s");
    return v;
  }();
  return u;
}

// Unit text `u` (where '.' is the regex wildcard: any character but '\n') at s[p..].
bool unit_at(const std::string& s, size_t p, const std::string& u) {
  if (p + u.size() > s.size()) return false;
  for (size_t i = 0; i < u.size(); ++i)
    if (u[i] == '.' ? s[p + i] == '\n' : s[p + i] != u[i]) return false;
  return true;
}

// re.sub(r"(^|\W)" + u + r"($|\W)", r"\1\2", s): removes `u` between non-word characters.
std::string remove_unit(const std::string& s, const std::string& u) {
  std::string out;
  size_t p = 0, copied = 0;
  auto after_ok = [&](size_t e) { return e == s.size() || !is_word(s[e]); };
  while (p <= s.size()) {
    size_t start = std::string::npos;  // where u starts in this match
    if (p == 0 && unit_at(s, 0, u) && after_ok(u.size()))
      start = 0;
    else if (p < s.size() && !is_word(s[p]) && unit_at(s, p + 1, u) && after_ok(p + 1 + u.size()))
      start = p + 1;
    if (start == std::string::npos) {
      ++p;
      continue;
    }
    const size_t e = start + u.size();
    out.append(s, copied, start - copied);
    copied = e;
    p = e + 1;  // the trailing \W (if any) is consumed by the match
  }
  out.append(s, std::min(copied, s.size()), std::string::npos);
  return out;
}

// re.sub(r"(\d+)\.0+([^\d]|$)", r"\1\2", s)
std::string drop_zero_decimals(const std::string& s) {
  std::string out;
  size_t p = 0, copied = 0;
  while (p < s.size()) {
    if (!is_digit(s[p])) {
      ++p;
      continue;
    }
    size_t d = p;
    while (d < s.size() && is_digit(s[d])) ++d;
    // \d+ greedy; a match needs "." then one or more '0' then a non-digit or the end.
    if (d < s.size() && s[d] == '.' && d + 1 < s.size() && s[d + 1] == '0') {
      size_t z = d + 1;
      while (z < s.size() && s[z] == '0') ++z;
      if (z == s.size() || !is_digit(s[z])) {
        out.append(s, copied, d - copied);
        copied = z;
        p = z < s.size() ? z + 1 : z;
        continue;
      }
    }
    p = d;
  }
  out.append(s, copied, std::string::npos);
  return out;
}

const std::map<std::string, long long>& number_words() {
  static const std::map<std::string, long long> m = {
      {"zero", 0},      {"one", 1},         {"two", 2},           {"three", 3},
      {"four", 4},      {"five", 5},        {"six", 6},           {"seven", 7},
      {"eight", 8},     {"nine", 9},        {"ten", 10},          {"eleven", 11},
      {"twelve", 12},   {"thirteen", 13},   {"fourteen", 14},     {"fifteen", 15},
      {"sixteen", 16},  {"seventeen", 17},  {"eighteen", 18},     {"nineteen", 19},
      {"twenty", 20},   {"thirty", 30},     {"forty", 40},        {"fifty", 50},
      {"sixty", 60},    {"seventy", 70},    {"eighty", 80},       {"ninety", 90},
      {"hundred", 100}, {"thousand", 1000}, {"million", 1000000}, {"billion", 1000000000}};
  return m;
}

// w2n.number_formation; nullopt where upstream raises IndexError (an empty group).
std::optional<long long> number_formation(const std::vector<std::string>& w) {
  std::vector<long long> n;
  for (const auto& x : w) n.push_back(number_words().at(x));
  if (n.empty()) return std::nullopt;
  if (n.size() == 4) return n[0] * n[1] + n[2] + n[3];
  if (n.size() == 3) return n[0] * n[1] + n[2];
  if (n.size() == 2) return (n[0] == 100 || n[1] == 100) ? n[0] * n[1] : n[0] + n[1];
  return n[0];
}

// Python float(s) for the strings strip_string produces (commas removed by the caller).
std::optional<double> py_float_parse(const std::string& s) {
  const std::string t = strip(s);
  if (t.empty()) return std::nullopt;
  for (char c : t)
    if (!(is_digit(c) || c == '.' || c == '+' || c == '-' || c == 'e' || c == 'E' || is_alpha(c))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  // strtod also reads hex floats and "infinity"/"nan" spellings Python does not; keep Python's set.
  std::string l;
  for (char c : t) l += lower(c);
  if (l.find('x') != std::string::npos) return std::nullopt;
  return v;
}

bool numeric_equal(double pred, double ref) {  // math.isclose(ref, pred, rel_tol=1e-4)
  if (pred == ref) return true;
  if (std::isinf(pred) || std::isinf(ref)) return false;
  return std::fabs(pred - ref) <= 1e-4 * std::max(std::fabs(pred), std::fabs(ref));
}

// Stand-in for sympy's symbolic_equal: the values of plain numeric expressions, else normalised text.
bool symbolic_equal(const std::string& a, const std::string& b) {
  const auto av = math::to_number(math::normalize(a)), bv = math::to_number(math::normalize(b));
  if (av && bv) return numeric_equal(*av, *bv);
  return math::equivalent(a, b);
}

std::optional<bool> compare_numerical(const std::string& pred, const std::string& ref) {
  std::string p = pred, r = ref;
  replace_all(p, ",", "");
  replace_all(r, ",", "");
  const auto pv = py_float_parse(p), rv = py_float_parse(r);
  if (!pv || !rv) return std::nullopt;
  for (double v : {*rv, *rv / 100, *rv * 100})
    if (numeric_equal(*pv, v)) return true;
  return false;
}

std::optional<bool> compare_structures(const std::string& pred, const std::string& ref) {
  auto interval = [](const std::string& s) {
    return (starts_with(s, "(") || starts_with(s, "[")) && (ends_with(s, ")") || ends_with(s, "]"));
  };
  if (interval(pred) && interval(ref) && pred.size() >= 2 && ref.size() >= 2) {
    const auto pp = split(std::string_view(pred).substr(1, pred.size() - 2), ",");
    const auto rp = split(std::string_view(ref).substr(1, ref.size() - 2), ",");
    bool all = pp.size() == rp.size();
    for (size_t i = 0; all && i < pp.size(); ++i) all = math_equal(strip(pp[i]), strip(rp[i]));
    if (all) return true;
  }
  const std::string_view begin = "\\begin{pmatrix}", end = "\\end{pmatrix}";
  if (starts_with(pred, begin) && starts_with(ref, begin)) {
    // Python's s[len(begin):-len(end)] (empty when the string is shorter than both).
    auto body = [&](const std::string& s) {
      const size_t hi = s.size() >= end.size() ? s.size() - end.size() : 0;
      return hi > begin.size() ? s.substr(begin.size(), hi - begin.size()) : std::string();
    };
    std::vector<std::vector<std::string>> pr, rr;
    for (const auto& row : split(body(pred), "\\\\")) pr.push_back(split(row, "&"));
    for (const auto& row : split(body(ref), "\\\\")) rr.push_back(split(row, "&"));
    if (pr.size() == rr.size() && pr[0].size() == rr[0].size()) {
      bool all = true;
      for (size_t i = 0; all && i < pr.size(); ++i)
        for (size_t j = 0; all && j < std::min(pr[i].size(), rr[i].size()); ++j)
          all = math_equal(strip(pr[i][j]), strip(rr[i][j]));
      if (all) return true;
    }
  }
  return std::nullopt;
}

// f"({lhs.strip()})-({rhs.strip()})"
std::string difference(const std::string& lhs, const std::string& rhs) {
  std::string d = "(";
  d += strip(lhs);
  d += ")-(";
  d += strip(rhs);
  d += ")";
  return d;
}

std::optional<bool> compare_equations(const std::string& pred, const std::string& ref) {
  const size_t pc = count(pred, "="), rc = count(ref, "=");
  if (pc == 1 && rc == 1) {
    const auto p = split(pred, "="), r = split(ref, "=");
    if (symbolic_equal(difference(p[0], p[1]), difference(r[0], r[1]))) return true;
  }
  if (pc == 1 && rc == 0) {
    const auto p = split(pred, "=");
    if (strip(p[0]).size() <= 2 && math_equal(strip(p[1]), ref)) return true;
  }
  if (rc == 1 && pc == 0) {
    const auto r = split(ref, "=");
    if (strip(r[0]).size() <= 2 && math_equal(pred, strip(r[1]))) return true;
  }
  return std::nullopt;
}

std::string fix_sqrt(const std::string& s) {  // re.sub(r"\\sqrt\s*(\w+)", r"\\sqrt{\1}", s)
  if (s.find("\\sqrt") == std::string::npos) return s;
  std::string out;
  size_t p = 0, copied = 0;
  while ((p = s.find("\\sqrt", p)) != std::string::npos) {
    size_t q = p + 5;
    while (q < s.size() && is_space(s[q])) ++q;
    size_t w = q;
    while (w < s.size() && is_word(s[w])) ++w;
    if (w == q) {
      p += 5;
      continue;
    }
    out.append(s, copied, p - copied);
    out += "\\sqrt{" + s.substr(q, w - q) + "}";
    copied = p = w;
  }
  out.append(s, copied, std::string::npos);
  return out;
}

std::string fix_fracs(const std::string& s) {
  auto sub = split(s, "\\frac");
  std::string out = sub[0];
  for (size_t i = 1; i < sub.size(); ++i) {
    const std::string& t = sub[i];
    out += "\\frac";
    if (!t.empty() && t[0] == '{') {
      out += t;
      continue;
    }
    if (t.size() < 2) return s;
    const std::string a(1, t[0]), b(1, t[1]), post = t.substr(2);
    if (b != "{")
      out += "{" + a + "}{" + b + "}" + post;
    else
      out += "{" + a + "}" + b + post;
  }
  return out;
}

// Python int(x) accepted and printed back unchanged: an optional '-' then digits without a leading
// zero (int() also takes "+5", "05", " 5", "1_0", but the round-trip assert rejects those).
bool canonical_int(const std::string& x) {
  size_t i = x.size() > 1 && x[0] == '-' ? 1 : 0;
  if (i == x.size()) return false;
  for (size_t k = i; k < x.size(); ++k)
    if (!is_digit(x[k])) return false;
  if (x[i] == '0' && x.size() - i > 1) return false;
  return !(i == 1 && x == "-0");
}

std::string fix_a_slash_b(const std::string& s) {
  const auto parts = split(s, "/");
  if (parts.size() != 2) return s;
  const std::string &a = parts[0], &b = parts[1];
  const bool a_ok = a.find("sqrt") != std::string::npos || canonical_int(a);
  const bool b_ok = b.find("sqrt") != std::string::npos || canonical_int(b);
  if (!a_ok || !b_ok) return s;
  return "\\frac{" + a + "}{" + b + "}";
}

// re.search(prefix + r"\s*:?\s*(.+)") from position q (just after the prefix), with the regex's
// backtracking order: the group is the rest of the line from the first start it accepts.
std::optional<std::string> answer_tail(std::string_view s, size_t q) {
  size_t a = q;
  while (a < s.size() && is_space(s[a])) ++a;
  for (size_t i = a + 1; i-- > q;) {  // first \s* from longest to empty
    for (int colon = 1; colon >= 0; --colon) {
      if (colon && (i >= s.size() || s[i] != ':')) continue;
      const size_t k = i + static_cast<size_t>(colon);
      size_t b = k;
      while (b < s.size() && is_space(s[b])) ++b;
      for (size_t j = b + 1; j-- > k;) {
        if (j < s.size() && s[j] != '\n') {
          const size_t e = s.find('\n', j);
          return std::string(s.substr(j, e == std::string::npos ? std::string_view::npos : e - j));
        }
      }
    }
  }
  return std::nullopt;
}

// First match of (?:final|the)\s+answer\s+is (case-insensitive) whose tail matches.
std::optional<std::string> answer_is(std::string_view s) {
  std::string l(s);
  for (char& c : l) c = lower(c);
  for (size_t p = 0; p < l.size(); ++p) {
    size_t q;
    if (l.compare(p, 5, "final") == 0)
      q = p + 5;
    else if (l.compare(p, 3, "the") == 0)
      q = p + 3;
    else
      continue;
    auto expect_ws_word = [&](size_t& r, std::string_view w) {
      size_t k = r;
      while (k < l.size() && is_space(l[k])) ++k;
      if (k == r || l.compare(k, w.size(), w) != 0) return false;
      r = k + w.size();
      return true;
    };
    if (!expect_ws_word(q, "answer") || !expect_ws_word(q, "is")) continue;
    if (auto t = answer_tail(s, q)) return t;
  }
  const std::string_view zh = "答案是";
  for (size_t p = s.find(zh); p != std::string::npos; p = s.find(zh, p + 1))
    if (auto t = answer_tail(s, p + zh.size())) return t;
  return std::nullopt;
}

// re.findall(r"[-+]?\d*\.?\d+", s)[-1]
std::optional<std::string> last_number(std::string_view s) {
  std::optional<std::string> last;
  auto num_end = [&](size_t i) -> size_t {  // end of \d*\.?\d+ at i, or npos
    size_t k = i;
    while (k < s.size() && is_digit(s[k])) ++k;
    if (k < s.size() && s[k] == '.' && k + 1 < s.size() && is_digit(s[k + 1])) {
      size_t m = k + 1;
      while (m < s.size() && is_digit(s[m])) ++m;
      return m;
    }
    return k > i ? k : std::string::npos;
  };
  size_t p = 0;
  while (p < s.size()) {
    size_t e = std::string::npos;
    if (s[p] == '-' || s[p] == '+') e = num_end(p + 1);
    if (e == std::string::npos) e = num_end(p);
    if (e == std::string::npos) {
      ++p;
      continue;
    }
    last = std::string(s.substr(p, e - p));
    p = e;
  }
  return last;
}

}  // namespace

std::optional<std::string> word_to_num(std::string_view text) {
  std::string s(text);
  replace_all(s, "-", " ");
  for (char& c : s) c = lower(c);
  if (!s.empty() && std::all_of(s.begin(), s.end(), is_digit)) {
    const size_t nz = s.find_first_not_of('0');
    return nz == std::string::npos ? "0" : s.substr(nz);
  }
  std::vector<std::string> words;
  size_t p = 0;
  while (p < s.size()) {
    while (p < s.size() && is_space(s[p])) ++p;
    size_t e = p;
    while (e < s.size() && !is_space(s[e])) ++e;
    if (e > p) {
      const std::string w = s.substr(p, e - p);
      if (w == "point" || number_words().count(w)) words.push_back(w);
    }
    p = e;
  }
  if (words.empty()) return std::nullopt;
  auto cnt = [&](const char* w) { return std::count(words.begin(), words.end(), std::string(w)); };
  if (cnt("thousand") > 1 || cnt("million") > 1 || cnt("billion") > 1 || cnt("point") > 1) return std::nullopt;
  std::vector<std::string> dec;
  if (cnt("point") == 1) {
    const auto it = std::find(words.begin(), words.end(), std::string("point"));
    dec.assign(it + 1, words.end());
    words.erase(it, words.end());
  }
  auto index = [&](const char* w) -> long {
    const auto it = std::find(words.begin(), words.end(), std::string(w));
    return it == words.end() ? -1 : static_cast<long>(it - words.begin());
  };
  const long bi = index("billion"), mi = index("million"), ti = index("thousand");
  if ((ti > -1 && (ti < mi || ti < bi)) || (mi > -1 && mi < bi)) return std::nullopt;
  auto slice = [&](long a, long b) { return std::vector<std::string>(words.begin() + a, words.begin() + b); };
  const long n = static_cast<long>(words.size());
  long long total = 0;
  if (n == 1) {
    total = number_words().at(words[0]);
  } else if (n > 1) {
    auto add = [&](std::optional<long long> v, long long mult) {
      if (!v) return false;
      total += *v * mult;
      return true;
    };
    if (bi > -1 && !add(number_formation(slice(0, bi)), 1000000000)) return std::nullopt;
    if (mi > -1 && !add(number_formation(bi > -1 ? slice(bi + 1, mi) : slice(0, mi)), 1000000)) return std::nullopt;
    if (ti > -1) {
      const auto grp = mi > -1 ? slice(mi + 1, ti) : bi > -1 ? slice(bi + 1, ti) : slice(0, ti);
      if (!add(number_formation(grp), 1000)) return std::nullopt;
    }
    std::optional<long long> hundreds = 0;
    if (ti > -1 && ti != n - 1)
      hundreds = number_formation(slice(ti + 1, n));
    else if (mi > -1 && mi != n - 1 && ti != n - 1)
      hundreds = number_formation(slice(mi + 1, n));
    else if (bi > -1 && bi != n - 1)
      hundreds = number_formation(slice(bi + 1, n));
    else if (ti == -1 && mi == -1 && bi == -1)
      hundreds = number_formation(words);
    if (!add(hundreds, 1)) return std::nullopt;
  }
  if (!dec.empty()) {
    std::string digits;
    for (const auto& w : dec) {
      const auto it = number_words().find(w);
      if (it == number_words().end() || it->second > 9) return std::to_string(total);  // get_decimal_sum → 0
      digits += std::to_string(it->second);
    }
    return py::float_repr(static_cast<double>(total) + std::strtod(("0." + digits).c_str(), nullptr));
  }
  return std::to_string(total);
}

std::optional<std::string> strip_string(std::string_view in) {
  std::string s = strip(in);
  replace_all(s, "\n", "");
  while (!s.empty() && s.back() == '.') s.pop_back();
  replace_all(s, "\\!", "");
  replace_all(s, "\\$", "");
  replace_all(s, "$", "");
  replace_all(s, "%", "");
  replace_all(s, "\\%", "");
  // re.sub(r"\\begin\{array\}\{.*?\}", r"\\begin{pmatrix}")
  {
    std::string out;
    size_t p = 0, a;
    const std::string_view open = "\\begin{array}{";
    while ((a = s.find(open, p)) != std::string::npos) {
      const size_t b = s.find('}', a + open.size());
      if (b == std::string::npos) break;
      out.append(s, p, a - p);
      out += "\\begin{pmatrix}";
      p = b + 1;
    }
    out.append(s, p, std::string::npos);
    s = out;
  }
  replace_all(s, "\\end{array}", "\\end{pmatrix}");
  replace_all(s, "bmatrix", "pmatrix");
  replace_all(s, "tfrac", "frac");
  replace_all(s, "dfrac", "frac");
  replace_all(s, "\\neq", "\\ne");
  replace_all(s, "\\leq", "\\le");
  replace_all(s, "\\geq", "\\ge");
  replace_all(s, "\\left", "");
  replace_all(s, "\\right", "");
  replace_all(s, "\\{", "{");
  replace_all(s, "\\}", "}");
  s = sub_lazy(s, "\\mbox{", "}", false);
  replace_all(s, "\\mathbf", "");
  replace_all(s, "^{\\circ}", "");
  replace_all(s, "^\\circ", "");
  s = sub_lazy(s, "\\text{", "}", true);
  for (int round = 0; round < 2; ++round)
    for (const auto& u : unit_texts()) {
      std::string t = remove_unit(s, u);
      if (!t.empty()) s = std::move(t);
    }
  if (auto n = word_to_num(s)) s = *n;
  // re.sub(r"^[a-zA-Z]\s*=\s*", "")
  if (!s.empty() && is_alpha(s[0])) {
    size_t k = 1;
    while (k < s.size() && is_space(s[k])) ++k;
    if (k < s.size() && s[k] == '=') {
      ++k;
      while (k < s.size() && is_space(s[k])) ++k;
      s.erase(0, k);
    }
  }
  replace_all(s, "infinity", "\\infty");
  replace_all(s, "inf", "\\infty");  // also rewrites the "\infty" just made, as upstream does
  s = drop_zero_decimals(s);
  replace_all(s, " .", " 0.");
  replace_all(s, "{.", "{0.");
  if (starts_with(s, ".")) s = "0" + s;
  replace_all(s, " ", "");
  s = fix_sqrt(s);
  s = fix_fracs(s);
  s = fix_a_slash_b(s);
  if (s.size() >= 1 && ((starts_with(s, "{") && ends_with(s, "}")) || (starts_with(s, "(") && ends_with(s, ")"))))
    s = s.size() >= 2 ? s.substr(1, s.size() - 2) : std::string();
  if (s.empty()) return std::nullopt;
  return strip(s);
}

std::optional<std::string> extract_answer(std::string_view r) {
  const size_t bx = r.rfind("boxed");
  if (bx != std::string_view::npos) {
    const std::string_view part = r.substr(bx + 5);
    if (part.empty()) return std::nullopt;
    if (part[0] == '{') {
      int stack = 1;
      std::string got;
      for (size_t i = 1; i < part.size(); ++i) {
        const char c = part[i];
        if (c == '{')
          ++stack;
        else if (c == '}' && --stack == 0)
          break;
        got += c;
      }
      if (stack == 0) return strip_string(got);
    }
    // re.search(r"\{?([^$}]+)\}?", part)
    auto run = [&](size_t i) {
      size_t k = i;
      while (k < part.size() && part[k] != '$' && part[k] != '}') ++k;
      return k;
    };
    for (size_t p = 0; p < part.size(); ++p) {
      if (part[p] == '{' && run(p + 1) > p + 1) return strip_string(part.substr(p + 1, run(p + 1) - p - 1));
      if (run(p) > p) return strip_string(part.substr(p, run(p) - p));
    }
  }
  if (auto t = answer_is(r)) {
    auto pred = strip_string(*t);
    if (pred && ends_with(*pred, ".")) pred->pop_back();
    return pred;
  }
  std::string no_commas(r);
  replace_all(no_commas, ",", "");
  return last_number(no_commas);
}

bool math_equal(const std::optional<std::string>& prediction, const std::optional<std::string>& reference) {
  if (!prediction || !reference) return false;
  const std::string &p = *prediction, &r = *reference;
  if (p == r) return true;
  if (auto v = compare_numerical(p, r)) return *v;
  if (auto v = compare_structures(p, r)) return *v;
  if (auto v = compare_equations(p, r)) return *v;
  return symbolic_equal(p, r);
}

double verify_math_answer(std::string_view response, std::string_view ground_truth) {
  return math_equal(extract_answer(response), extract_answer(ground_truth)) ? 1.0 : 0.0;
}

}  // namespace trinity::workflow::qwen25
