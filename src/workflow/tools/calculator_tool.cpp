// calculator (see calculator_tool.h): a recursive-descent evaluator over doubles.
#include "workflow/tools/calculator_tool.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/error.h"
#include "core/json_limits.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  double parse() {
    const double v = sum();
    skip();
    if (i_ < s_.size()) fail(strcat("unexpected '", s_[i_], "' at position ", i_));
    return v;
  }

 private:
  [[noreturn]] static void fail(const std::string& m) { throw std::runtime_error(m); }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(std::string_view t) {
    skip();
    if (s_.compare(i_, t.size(), t) != 0) return false;
    i_ += t.size();
    return true;
  }
  double sum() {
    double v = product();
    for (;;) {
      if (eat("+"))
        v += product();
      else if (eat("-"))
        v -= product();
      else
        return v;
    }
  }
  double product() {
    double v = unary();
    for (;;) {
      if (eat("*"))
        v *= unary();
      else if (eat("/")) {
        const double d = unary();
        if (d == 0) fail("division by zero");
        v /= d;
      } else if (eat("%")) {
        const double d = unary();
        if (d == 0) fail("modulo by zero");
        v = v - d * std::floor(v / d);  // Python's sign convention
      } else
        return v;
    }
  }
  double unary() {
    if (eat("-")) return -unary();
    if (eat("+")) return unary();
    return power();
  }
  double power() {
    const double base = atom();
    if (eat("**") || eat("^")) return std::pow(base, unary());  // right-associative; -2**2 = -(2**2)
    return base;
  }
  double atom() {
    skip();
    if (eat("(")) {
      if (++depth_ > 64) fail("parentheses nested too deep");
      const double v = sum();
      if (!eat(")")) fail(strcat("missing ')' at position ", i_));
      --depth_;
      return v;
    }
    if (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]))) {
      size_t j = i_;
      while (j < s_.size() && std::isalpha(static_cast<unsigned char>(s_[j]))) ++j;
      const std::string f = s_.substr(i_, j - i_);
      i_ = j;
      if (!eat("(")) fail(strcat("expected '(' after '", f, "'"));
      if (++depth_ > 64) fail("parentheses nested too deep");
      const double x = sum();
      if (!eat(")")) fail(strcat("missing ')' after the argument of ", f));
      --depth_;
      if (f == "sqrt") {
        if (x < 0) fail("sqrt of a negative number");
        return std::sqrt(x);
      }
      if (f == "abs") return std::fabs(x);
      if (f == "floor") return std::floor(x);
      if (f == "ceil") return std::ceil(x);
      if (f == "round") return std::nearbyint(x);
      if (f == "log") {
        if (x <= 0) fail("log of a non-positive number");
        return std::log(x);
      }
      if (f == "exp") return std::exp(x);
      fail(strcat("unknown function '", f, "'"));
    }
    const char* start = s_.c_str() + i_;
    char* end = nullptr;
    if (i_ >= s_.size() || !(std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.'))
      fail(i_ >= s_.size() ? "unexpected end of the expression" : strcat("unexpected '", s_[i_], "' at position ", i_));
    const double v = std::strtod(start, &end);
    if (end == start) fail(strcat("bad number at position ", i_));
    i_ += static_cast<size_t>(end - start);
    return v;
  }

  const std::string& s_;
  size_t i_ = 0;
  int depth_ = 0;
};

std::string format_number(double v) {
  if (std::nearbyint(v) == v && std::fabs(v) < 1e15) return strcat(static_cast<long long>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

}  // namespace

std::optional<double> evaluate_expression(const std::string& expr, std::string& error) {
  if (expr.size() > 10000) {
    error = "expression longer than 10000 characters";
    return std::nullopt;
  }
  try {
    const double v = Parser(expr).parse();
    if (!std::isfinite(v)) {
      error = "the result is not a finite number";
      return std::nullopt;
    }
    return v;
  } catch (const std::runtime_error& e) {
    error = e.what();
    return std::nullopt;
  }
}

std::string CalculatorTool::schema_json() const {
  return json{{"type", "function"},
              {"function",
               {{"name", name()},
                {"description",
                 "Evaluate an arithmetic expression: numbers, + - * / % ** and parentheses, and the functions "
                 "sqrt, abs, floor, ceil, round, log, exp."},
                {"parameters",
                 {{"type", "object"},
                  {"properties", {{"expression", {{"type", "string"}, {"description", "e.g. (3 + 4) * 2 ** 3"}}}}},
                  {"required", {"expression"}}}}}}}
      .dump();
}

ToolResult CalculatorTool::call(const std::string& arguments_json) {
  ToolResult r;
  json args;
  try {
    check_json_depth(arguments_json, "calculator arguments", kMaxJsonDepth, "tool");
    args = json::parse(arguments_json);
  } catch (const std::exception& e) {
    r.error = true;
    r.text = strcat("Error: the arguments are not a JSON object: ", e.what());
    return r;
  }
  const auto ex = args.is_object() ? args.find("expression") : args.end();
  if (ex == args.end() || !ex->is_string()) {
    r.error = true;
    r.text = "Error: calculator needs a string argument \"expression\".";
    return r;
  }
  std::string err;
  const auto v = evaluate_expression(ex->get<std::string>(), err);
  if (!v) {
    r.error = true;
    r.text = "Error: " + err;
    return r;
  }
  r.text = format_number(*v);
  return r;
}

}  // namespace trinity::workflow
