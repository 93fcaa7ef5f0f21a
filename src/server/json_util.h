// Helpers shared by the server's request parsers (chat/completions and Responses) and response
// writers: 400 errors naming the request's own field, JSON type names as the errors spell them,
// null-as-absent field access, lossless-enough dumping and logprob values. Internal to src/server
// (it includes nlohmann/json; keep it out of public headers).
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "server/protocol.h"

namespace trinity::server::json_util {

using json = nlohmann::ordered_json;

[[noreturn]] inline void bad(const std::string& param, const std::string& msg, const std::string& code = "") {
  throw ApiError(400, msg, param, code);
}

inline const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::number_float:
      return "number";
    default:
      return "integer";
  }
}

[[noreturn]] inline void wrong_type(const std::string& param, const char* want, const json& got) {
  bad(param, strcat("'", param, "' must be ", want, ", got ", type_name(got)));
}

// Field access treating null as absent.
inline const json* field(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return nullptr;
  return &*it;
}

// Compact JSON; invalid UTF-8 in strings becomes U+FFFD instead of throwing.
inline std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A logprob as JSON; -inf (a token the full softmax gives zero mass) becomes the most negative value
// clients accept.
inline json lp_json(float lp) {
  return std::isinf(lp) ? json(-9999.0) : json(lp);
}

}  // namespace trinity::server::json_util
