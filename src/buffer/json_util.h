// Internal JSON helpers of the buffer layer (nlohmann/json): typed field access with errors that name
// the source and field, and lossless float arrays (NaN/Inf written as the strings "NaN"/"Infinity").
// Only buffer .cpp files include this header.
#pragma once

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/json_limits.h"

namespace trinity::buffer::detail {

using nlohmann::json;

inline json parse_json(std::string_view text, const std::string& where) {
  check_json_depth(text, where, kMaxJsonDepth, "buffer");
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw ValueError("buffer", strcat(where, ": invalid JSON: ", e.what()));
  }
}

// JSON text of a free-form field stored as text ("" = absent -> default).
inline json text_to_json(const std::string& text, const json& def, const std::string& where) {
  if (text.empty()) return def;
  return parse_json(text, where);
}

inline json float_to_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

inline double json_to_float(const json& j, const std::string& where) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  throw ValueError("buffer", strcat(where, ": expected a number, got ", j.dump()));
}

template <typename T>
T get_as(const json& obj, const char* key, const std::string& where) {
  const auto& v = obj.at(key);
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    throw ValueError("buffer", strcat(where, ": field '", key, "' has the wrong type: ", v.dump()));
  }
}

}  // namespace trinity::buffer::detail
