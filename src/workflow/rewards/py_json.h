// Python's text forms, for rewards and prompts that must match upstream byte for byte: repr() of a
// float (shortest round-trip digits; fixed notation for exponents -4..15 with ".0" on integral
// values, else "1e+16" style) and json.dumps with its defaults (ensure_ascii: every non-ASCII code
// point as \uXXXX, surrogate pairs above U+FFFF; ", " and ": " separators; NaN / Infinity; object
// keys in their stored order unless sort_keys).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace trinity::workflow::py {

std::string float_repr(double v);
std::string json_dumps(const nlohmann::ordered_json& v, bool sort_keys = false);

}  // namespace trinity::workflow::py
