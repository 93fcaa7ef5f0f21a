// Limits for JSON read from untrusted input (tasksets, buffer rows, experience files, tool
// arguments, tokenizer files). nlohmann's recursive value code (parse, dump, destroy, our own
// walkers) overflows the stack on deeply nested text, so every such parse first checks the nesting
// depth with a cheap byte scan. No nlohmann include here: the check works on the raw text.
#pragma once

#include <cstddef>
#include <string_view>

namespace trinity {

// Deepest nesting of arrays/objects accepted in untrusted JSON. Real data (chat messages, tool
// calls, tokenizer.json) nests well under 32 levels.
inline constexpr int kMaxJsonDepth = 256;

// Nesting depth of `text` ('[' / '{' outside strings), without validating the JSON otherwise.
int json_depth(std::string_view text);

// Throws ValueError "[component] <what>: JSON nested deeper than <max_depth> levels ..." when
// `text` nests deeper than `max_depth`. Call before nlohmann::json::parse on untrusted text.
void check_json_depth(std::string_view text, const std::string_view& what, int max_depth = kMaxJsonDepth,
                      std::string_view component = "json");

}  // namespace trinity
