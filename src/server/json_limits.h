// Nesting limit for JSON text the server parses (request bodies, tool-call argument strings,
// tool calls in model output, schemas). nlohmann's dump, copy and comparisons recurse, so text nested
// deeper than kMaxRequestJsonDepth is refused before it is parsed (depth scan: core/json_limits.h).
#pragma once

#include "core/json_limits.h"

namespace trinity::server {

inline constexpr int kMaxRequestJsonDepth = 64;

using trinity::json_depth;

}  // namespace trinity::server
