// Countdown equation evaluator (recursive descent) and TinyZero's compute_score.
#include "workflow/rewards/countdown.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace trinity::workflow::countdown {
namespace {

// expr := term (('+'|'-') term)* ; term := factor (('*'|'/') factor)* ;
// factor := ('+'|'-') factor | number | '(' expr ')'
class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}
  std::optional<double> parse() {
    auto v = expr();
    skip();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  std::optional<double> expr() {
    auto v = term();
    while (v) {
      skip();
      if (pos_ >= s_.size() || (s_[pos_] != '+' && s_[pos_] != '-')) break;
      const char op = s_[pos_++];
      auto r = term();
      if (!r) return std::nullopt;
      v = op == '+' ? *v + *r : *v - *r;
    }
    return v;
  }
  std::optional<double> term() {
    auto v = factor();
    while (v) {
      skip();
      if (pos_ >= s_.size() || (s_[pos_] != '*' && s_[pos_] != '/')) break;
      const char op = s_[pos_++];
      if (pos_ < s_.size() && s_[pos_] == op) return std::nullopt;  // ** and // are not allowed
      auto r = factor();
      if (!r) return std::nullopt;
      if (op == '/' && *r == 0.0) return std::nullopt;  // ZeroDivisionError
      v = op == '*' ? *v * *r : *v / *r;
    }
    return v;
  }
  std::optional<double> factor() {
    if (++depth_ > 200) return std::nullopt;
    skip();
    if (pos_ >= s_.size()) return std::nullopt;
    std::optional<double> out;
    const char c = s_[pos_];
    if (c == '+' || c == '-') {
      ++pos_;
      auto v = factor();
      if (v) out = c == '-' ? -*v : *v;
    } else if (c == '(') {
      ++pos_;
      auto v = expr();
      skip();
      if (v && pos_ < s_.size() && s_[pos_] == ')') {
        ++pos_;
        out = v;
      }
    } else if ((c >= '0' && c <= '9') || c == '.') {
      const size_t b = pos_;
      size_t digits = 0, dots = 0;
      while (pos_ < s_.size() && ((s_[pos_] >= '0' && s_[pos_] <= '9') || s_[pos_] == '.')) {
        if (s_[pos_] == '.') ++dots;
        else ++digits;
        ++pos_;
      }
      if (digits > 0 && dots <= 1) out = std::strtod(std::string(s_.substr(b, pos_ - b)).c_str(), nullptr);
    }
    --depth_;
    return out;
  }
  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::optional<double> eval_expression(std::string_view expr) {
  // TinyZero's whitelist: r"^[\d+\-*/().\s]+$"
  for (char c : expr) {
    const bool ok = (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '*' || c == '/' || c == '(' ||
                    c == ')' || c == '.' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (!ok) return std::nullopt;
  }
  auto v = Parser(expr).parse();
  if (v && !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::optional<std::string> extract_equation(std::string_view response) {
  // Last complete <answer>...</answer> pair (re.finditer(r"<answer>(.*?)</answer>") last match).
  std::optional<std::string> last;
  size_t pos = 0;
  while (true) {
    const size_t open = response.find("<answer>", pos);
    if (open == std::string::npos) break;
    const size_t close = response.find("</answer>", open + 8);
    if (close == std::string::npos) break;
    std::string_view inner = response.substr(open + 8, close - open - 8);
    // A later "<answer>" inside the lazy match starts the pair at the first one, as Python does.
    size_t b = 0, e = inner.size();
    while (b < e && (inner[b] == ' ' || inner[b] == '\n' || inner[b] == '\t' || inner[b] == '\r')) ++b;
    while (e > b && (inner[e - 1] == ' ' || inner[e - 1] == '\n' || inner[e - 1] == '\t' || inner[e - 1] == '\r')) --e;
    last = std::string(inner.substr(b, e - b));
    pos = close + 9;
  }
  return last;
}

std::vector<long long> numbers_in(std::string_view equation) {
  std::vector<long long> out;
  size_t i = 0;
  while (i < equation.size()) {
    if (equation[i] >= '0' && equation[i] <= '9') {
      const size_t b = i;
      while (i < equation.size() && equation[i] >= '0' && equation[i] <= '9') ++i;
      out.push_back(std::strtoll(std::string(equation.substr(b, i - b)).c_str(), nullptr, 10));
    } else {
      ++i;
    }
  }
  return out;
}

double score(std::string_view response, double target, const std::vector<long long>& numbers,
             double format_score, double full_score) {
  const auto eq = extract_equation(response);
  if (!eq) return 0.0;
  auto used = numbers_in(*eq);
  auto avail = numbers;
  std::sort(used.begin(), used.end());
  std::sort(avail.begin(), avail.end());
  if (used != avail) return format_score;
  const auto v = eval_expression(*eq);
  if (!v) return format_score;
  return std::fabs(*v - target) < 1e-5 ? full_score : format_score;
}

}  // namespace trinity::workflow::countdown
