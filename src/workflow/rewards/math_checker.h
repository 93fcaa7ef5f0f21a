// Math answer checking in the spirit of math_verify: extract the final answer of a response
// (last \boxed{...} with nested braces, else the last <answer>...</answer>, else the last number),
// normalise LaTeX noise (\left/\right, $, spacing, \text{} units, %, degrees, thousands commas,
// \dfrac/\tfrac), then compare numerically (integers, decimals, scientific, a/b, \frac{a}{b},
// mixed numbers, \sqrt) within 1e-6 relative, element-wise for tuples/intervals, else as
// normalised strings. Gold answers: GSM8K "... #### 72" uses the text after ####.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trinity::workflow::math {

// Content of the last \boxed{...} (or \fbox{...}, "\boxed 5"), nested braces kept; nullopt if none.
std::optional<std::string> last_boxed(std::string_view s);
// Final answer candidate of a model response (boxed > <answer> > last number); nullopt if none.
std::optional<std::string> extract_answer(std::string_view response);
// The gold answer text: after the last "####" if present, else the boxed content, else all of it.
std::string extract_gold(std::string_view truth);
// Canonical string form of an answer (see the header comment).
std::string normalize(std::string_view answer);
// Numeric value of a normalised answer, if it is a number.
std::optional<double> to_number(std::string_view normalized);
// Two answers (raw or normalised) are equal: numerically, element-wise, or as strings.
bool equivalent(std::string_view pred, std::string_view gold);
// Full check of a response against a gold answer.
bool verify(std::string_view response, std::string_view truth);

}  // namespace trinity::workflow::math
