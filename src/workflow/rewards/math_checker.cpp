// Math answer extraction, normalisation and equivalence (see math_checker.h). Hand-written
// scanners, no regex: responses can be long and adversarial.
#include "workflow/rewards/math_checker.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/text.h"

namespace trinity::workflow::math {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

// Removes a LaTeX command word (e.g. "\left") where it is not the prefix of a longer command.
void remove_command(std::string& s, std::string_view cmd) {
  size_t pos = 0;
  while ((pos = s.find(cmd, pos)) != std::string::npos) {
    const size_t end = pos + cmd.size();
    if (end < s.size() && is_alpha(s[end])) {
      pos = end;
      continue;
    }
    s.erase(pos, cmd.size());
  }
}

// s[open] == '{': index one past the matching '}', or npos when unbalanced.
size_t match_brace(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '{' || s[i + 1] == '}')) {
      ++i;
      continue;
    }
    if (s[i] == '{') ++depth;
    else if (s[i] == '}' && --depth == 0) return i + 1;
  }
  return std::string::npos;
}

// One LaTeX argument at `pos`: a {group} or a single character. Returns the content and advances.
std::optional<std::string> take_arg(std::string_view s, size_t& pos) {
  if (pos >= s.size()) return std::nullopt;
  if (s[pos] == '{') {
    const size_t end = match_brace(s, pos);
    if (end == std::string::npos) return std::nullopt;
    std::string out(s.substr(pos + 1, end - pos - 2));
    pos = end;
    return out;
  }
  return std::string(1, s[pos++]);
}

bool close(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return a == b;
  const double diff = std::fabs(a - b);
  return diff <= 1e-12 || diff <= 1e-6 * std::max(std::fabs(a), std::fabs(b));
}

// Plain decimal / scientific literal covering the whole string.
std::optional<double> plain_number(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    size_t ed = 0;
    while (j < s.size() && is_digit(s[j])) ++j, ++ed;
    if (ed == 0) return std::nullopt;
    i = j;
  }
  if (i != s.size()) return std::nullopt;
  return std::strtod(std::string(s).c_str(), nullptr);
}

// Splits at top-level commas; `open`/`close` receive the outer bracket pair when present.
std::vector<std::string> split_top(std::string_view s, char& open, char& close_c) {
  open = close_c = 0;
  auto is_open = [](char c) { return c == '(' || c == '[' || c == '{'; };
  auto is_close = [](char c) { return c == ')' || c == ']' || c == '}'; };
  if (s.size() >= 2 && is_open(s.front()) && is_close(s.back())) {
    // Only strip when the first bracket closes at the very end (intervals may mix ( and ]).
    int depth = 0;
    bool whole = true;
    for (size_t i = 0; i < s.size(); ++i) {
      if (is_open(s[i])) ++depth;
      else if (is_close(s[i]) && --depth == 0 && i + 1 != s.size()) whole = false;
    }
    if (whole) {
      open = s.front();
      close_c = s.back();
      s = s.substr(1, s.size() - 2);
    }
  }
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (is_open(s[i])) ++depth;
    else if (is_close(s[i])) --depth;
    else if (s[i] == ',' && depth == 0) {
      parts.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

// Replaces \cmd{X} (text-like commands) by X, or drops it when it is a trailing unit.
void unwrap_text_commands(std::string& s) {
  static const char* kCmds[] = {"\\text", "\\textbf", "\\textit", "\\mbox", "\\mathrm", "\\mathbf",
                                "\\textrm", "\\operatorname"};
  bool changed = true;
  while (changed) {
    changed = false;
    for (const char* cmd : kCmds) {
      const std::string_view c(cmd);
      size_t pos = s.find(c);
      while (pos != std::string::npos) {
        const size_t after = pos + c.size();
        if (after < s.size() && s[after] == '{') {
          const size_t end = match_brace(s, after);
          if (end == std::string::npos) break;
          std::string inner = s.substr(after + 1, end - after - 2);
          const std::string before = trim(std::string_view(s).substr(0, pos));
          const bool trailing_unit = end == s.size() && !before.empty() &&
                                     (is_digit(before.back()) || before.back() == '}') &&
                                     c != "\\operatorname" && c != "\\mathbf";
          s.replace(pos, end - pos, trailing_unit ? "" : inner);
          changed = true;
          break;
        }
        pos = s.find(c, after);
      }
    }
  }
}

// "\frac12" -> "\frac{1}{2}", "\sqrt3" -> "\sqrt{3}".
void fix_shorthand(std::string& s) {
  for (const std::string_view cmd : {std::string_view("\\frac"), std::string_view("\\sqrt")}) {
    const int nargs = cmd == "\\frac" ? 2 : 1;
    size_t pos = 0;
    while ((pos = s.find(cmd, pos)) != std::string::npos) {
      size_t p = pos + cmd.size();
      if (p < s.size() && is_alpha(s[p])) {  // \fracx? a longer command name
        pos = p;
        continue;
      }
      std::string rebuilt(cmd);
      bool ok = true;
      for (int a = 0; a < nargs; ++a) {
        auto arg = take_arg(s, p);
        if (!arg) {
          ok = false;
          break;
        }
        rebuilt += "{" + *arg + "}";
      }
      if (!ok) break;
      s.replace(pos, p - pos, rebuilt);
      pos += rebuilt.size();
    }
  }
}

bool is_thousands_number(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  size_t lead = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++lead;
  if (lead == 0 || lead > 3) return false;
  size_t groups = 0;
  while (i < s.size() && s[i] == ',') {
    for (int k = 1; k <= 3; ++k)
      if (i + static_cast<size_t>(k) >= s.size() || !is_digit(s[i + static_cast<size_t>(k)])) return false;
    i += 4;
    ++groups;
  }
  if (groups == 0) return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  return i == s.size();
}

// Numbers in free text: "-1,234.5", "3/4". Returns the last one.
std::optional<std::string> last_number(std::string_view s) {
  std::optional<std::string> last;
  size_t i = 0;
  while (i < s.size()) {
    if (!is_digit(s[i]) && !(s[i] == '.' && i + 1 < s.size() && is_digit(s[i + 1]))) {
      ++i;
      continue;
    }
    size_t b = i;
    if (b > 0 && s[b - 1] == '-') --b;
    size_t e = i;
    while (e < s.size()) {
      if (is_digit(s[e])) ++e;
      else if ((s[e] == ',' || s[e] == '.' || s[e] == '/') && e + 1 < s.size() && is_digit(s[e + 1])) ++e;
      else break;
    }
    std::string tok(s.substr(b, e - b));
    if (tok.find(',') != std::string::npos && !is_thousands_number(tok)) {
      // "1,2,3" is a list, not a number: keep the last element.
      tok = tok.substr(tok.rfind(',') + 1);
    }
    last = tok;
    i = e;
  }
  return last;
}

}  // namespace

std::optional<std::string> last_boxed(std::string_view s) {
  size_t best = std::string::npos;
  size_t best_len = 0;
  for (const std::string_view cmd : {std::string_view("\\boxed"), std::string_view("\\fbox")}) {
    const size_t p = s.rfind(cmd);
    if (p != std::string::npos && (best == std::string::npos || p > best)) best = p, best_len = cmd.size();
  }
  if (best == std::string::npos) return std::nullopt;
  size_t p = best + best_len;
  if (p < s.size() && s[p] == '{') {
    const size_t end = match_brace(s, p);
    if (end == std::string::npos) return std::nullopt;
    return std::string(s.substr(p + 1, end - p - 2));
  }
  if (p < s.size() && s[p] == ' ') {  // "\boxed 5"
    ++p;
    size_t e = p;
    while (e < s.size() && !is_ascii_space(s[e]) && s[e] != '$') ++e;
    if (e > p) return std::string(s.substr(p, e - p));
  }
  return std::nullopt;
}

std::optional<std::string> extract_answer(std::string_view response) {
  if (auto b = last_boxed(response)) return b;
  const size_t open = response.rfind("<answer>");
  if (open != std::string::npos) {
    const size_t start = open + 8;
    const size_t close_pos = response.find("</answer>", start);
    std::string inner = trim(response.substr(start, close_pos == std::string::npos ? std::string::npos : close_pos - start));
    if (!inner.empty()) return inner;
  }
  return last_number(response);
}

std::string extract_gold(std::string_view truth) {
  const size_t p = truth.rfind("####");
  if (p != std::string::npos) return trim(truth.substr(p + 4));
  if (auto b = last_boxed(truth)) return trim(*b);
  return trim(truth);
}

std::string normalize(std::string_view answer) {
  std::string s = trim(answer);
  if ((starts_with(s, "\\(") && ends_with(s, "\\)")) || (starts_with(s, "\\[") && ends_with(s, "\\]")))
    s = trim(std::string_view(s).substr(2, s.size() - 4));
  replace_all(s, "\\$", "");
  replace_all(s, "$", "");
  for (const char* c : {"\\left", "\\right", "\\displaystyle", "\\bigl", "\\bigr", "\\Bigl", "\\Bigr"})
    remove_command(s, c);
  for (const char* sp : {"\\!", "\\,", "\\;", "\\:", "\\ ", "~"}) replace_all(s, sp, "");
  replace_all(s, "^{\\circ}", "");
  replace_all(s, "^\\circ", "");
  replace_all(s, "\xC2\xB0", "");  // degree sign
  remove_command(s, "\\circ");
  remove_command(s, "\\degree");
  replace_all(s, "\\%", "");
  replace_all(s, "%", "");
  unwrap_text_commands(s);
  replace_all(s, "\\dfrac", "\\frac");
  replace_all(s, "\\tfrac", "\\frac");
  // Remove whitespace.
  std::string t;
  for (char c : s)
    if (!is_ascii_space(c)) t += c;
  s = std::move(t);
  fix_shorthand(s);
  while (!s.empty() && s.back() == '.') s.pop_back();
  // "x=5" / "y = \frac{1}{2}": keep the value of a single-letter assignment.
  if (s.size() > 2 && is_alpha(s[0]) && s[1] == '=') s = s.substr(2);
  if (!s.empty() && s[0] == '+') s = s.substr(1);
  if (is_thousands_number(s)) replace_all(s, ",", "");
  // Whole-answer braces: "{5}".
  while (s.size() >= 2 && s.front() == '{' && match_brace(s, 0) == s.size()) s = s.substr(1, s.size() - 2);
  return s;
}

std::optional<double> to_number(std::string_view n) {
  if (n.empty()) return std::nullopt;
  if (n.size() >= 2 && n.front() == '{' && match_brace(n, 0) == n.size()) return to_number(n.substr(1, n.size() - 2));
  if (auto v = plain_number(n)) return v;
  if (n[0] == '-') {
    if (auto v = to_number(n.substr(1))) return -*v;
    return std::nullopt;
  }
  // a/b with one top-level slash.
  const size_t slash = n.find('/');
  if (slash != std::string::npos && n.find('/', slash + 1) == std::string::npos) {
    auto a = to_number(n.substr(0, slash)), b = to_number(n.substr(slash + 1));
    if (a && b && *b != 0.0) return *a / *b;
    return std::nullopt;
  }
  // mantissa \times 10^{e} / \cdot 10^e
  for (const std::string_view op : {std::string_view("\\times10^"), std::string_view("\\cdot10^")}) {
    const size_t p = n.find(op);
    if (p == std::string::npos) continue;
    auto m = to_number(n.substr(0, p));
    size_t q = p + op.size();
    auto e_arg = take_arg(n, q);
    if (!m || !e_arg || q != n.size()) return std::nullopt;
    auto e = to_number(*e_arg);
    if (!e) return std::nullopt;
    return *m * std::pow(10.0, *e);
  }
  // Integer coefficient followed by \frac (mixed number) or \sqrt (product).
  size_t k = 0;
  while (k < n.size() && is_digit(n[k])) ++k;
  const std::string_view rest = n.substr(k);
  double coef = 1.0;
  bool has_coef = k > 0;
  if (has_coef) coef = std::strtod(std::string(n.substr(0, k)).c_str(), nullptr);
  if (starts_with(rest, "\\frac{")) {
    size_t p = k + 5;
    auto a = take_arg(n, p);
    auto b = take_arg(n, p);
    if (!a || !b || p != n.size()) return std::nullopt;
    auto av = to_number(*a), bv = to_number(*b);
    if (!av || !bv || *bv == 0.0) return std::nullopt;
    return has_coef ? coef + *av / *bv : *av / *bv;  // 1\frac{1}{2} = 1.5
  }
  if (starts_with(rest, "\\sqrt{")) {
    size_t p = k + 5;
    auto a = take_arg(n, p);
    if (!a || p != n.size()) return std::nullopt;
    auto av = to_number(*a);
    if (!av || *av < 0) return std::nullopt;
    return coef * std::sqrt(*av);
  }
  return std::nullopt;
}

bool equivalent(std::string_view pred, std::string_view gold) {
  const std::string p = normalize(pred), g = normalize(gold);
  if (p.empty() || g.empty()) return false;
  if (p == g) return true;
  const auto pv = to_number(p), gv = to_number(g);
  if (pv && gv) return close(*pv, *gv);
  if (pv || gv) return false;
  char po, pc, go, gc;
  const auto pp = split_top(p, po, pc), gp = split_top(g, go, gc);
  if ((pp.size() > 1 || gp.size() > 1) && pp.size() == gp.size() && po == go && pc == gc) {
    for (size_t i = 0; i < pp.size(); ++i)
      if (!equivalent(pp[i], gp[i])) return false;
    return true;
  }
  // Braces only group: "\frac{1}{x}" vs "\frac1x" already fixed; compare without them.
  std::string pb, gb;
  for (char c : p)
    if (c != '{' && c != '}') pb += c;
  for (char c : g)
    if (c != '{' && c != '}') gb += c;
  return !pb.empty() && pb == gb;
}

bool verify(std::string_view response, std::string_view truth) {
  const std::string gold = extract_gold(truth);
  if (gold.empty()) return false;
  const auto pred = extract_answer(response);
  if (!pred) return false;
  if (equivalent(*pred, gold)) return true;
  // A sentence or equation inside <answer>: try "... = value" and its last number.
  const std::string np = normalize(*pred);
  if (to_number(np)) return false;
  const size_t eq = np.rfind('=');
  if (eq != std::string::npos && equivalent(np.substr(eq + 1), gold)) return true;
  if (to_number(normalize(gold))) {
    if (auto n = last_number(*pred)) return equivalent(*n, gold);
  }
  return false;
}

}  // namespace trinity::workflow::math
