// Nesting limit for JSON text the server parses (request bodies, tool-call argument strings,
// tool calls in model output). nlohmann's dump, copy and comparisons recurse, so text nested
// deeper than kMaxJsonDepth is refused before it is parsed.
#pragma once

#include <string_view>

namespace trinity::server {

inline constexpr int kMaxJsonDepth = 64;

// Deepest bracket nesting of JSON text ([ and { outside strings); a pre-scan, no parsing.
int json_depth(std::string_view s);

}  // namespace trinity::server
