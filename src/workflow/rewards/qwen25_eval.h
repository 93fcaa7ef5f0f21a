// Qwen2.5-Math answer checking as upstream's trinity/common/rewards/qwen25_eval.py (used by
// math_eval_workflow and on_policy_distill_math_workflow): extract_answer (text after the last
// "boxed" with balanced braces, else "the/final answer is ...", else the last number), strip_string
// (LaTeX clean-up, MathQA unit words, word2number, "x = " prefix, fracs, a/b), math_equal (exact
// string, numeric within rel 1e-4 also against ref/100 and ref*100, intervals, pmatrix, equations).
// Differences: upstream's last resort is sympy (parse_latex + simplify); ours compares the values of
// plain numeric expressions (fractions, \sqrt, mixed numbers, via rewards/math_checker.h) within
// rel 1e-4, else math::equivalent's normalised strings. \w / \s are ASCII (bytes >= 0x80 count as
// word characters); where upstream raises outside its try blocks (word2number IndexError) the text
// is left unconverted.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trinity::workflow::qwen25 {

std::optional<std::string> extract_answer(std::string_view response);
// nullopt where upstream returns None (the cleaned string is empty).
std::optional<std::string> strip_string(std::string_view s);
// word2number's w2n.word_to_num as text (Python str() of the int/float); nullopt = ValueError.
std::optional<std::string> word_to_num(std::string_view s);
bool math_equal(const std::optional<std::string>& prediction, const std::optional<std::string>& reference);
// 1.0 when the extracted answers of response and ground truth are math_equal, else 0.0.
double verify_math_answer(std::string_view response, std::string_view ground_truth);

}  // namespace trinity::workflow::qwen25
