// Countdown (TinyZero) reward helpers: a safe arithmetic evaluator for the model's equation
// (numbers, + - * /, unary minus, parentheses; Python's true division) and the scoring rule
//   no <answer> equation -> 0; numbers not used exactly once each, syntax error, division by zero
//   or |result - target| >= 1e-5 -> format_score (0.1); correct -> score (1.0).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trinity::workflow::countdown {

// Value of an expression over + - * / ( ) and decimal numbers; nullopt on any error.
std::optional<double> eval_expression(std::string_view expr);
// Content of the last <answer>...</answer> (trimmed); nullopt if none.
std::optional<std::string> extract_equation(std::string_view response);
// Integers appearing in the equation, in order (TinyZero: re.findall(r"\d+")).
std::vector<long long> numbers_in(std::string_view equation);
double score(std::string_view response, double target, const std::vector<long long>& numbers,
             double format_score = 0.1, double full_score = 1.0);

}  // namespace trinity::workflow::countdown
