// Studio HTTP helpers (http_util.h).
#include "studio/http_util.h"

#include <cctype>
#include <cstdio>

#include "core/error.h"
#include "core/json_limits.h"
#include "server/protocol.h"

namespace trinity::studio {

std::string error_json(int status, const std::string& message, const std::string& code, const std::string& param) {
  return server::error_body(
      server::ApiError(status, message, param, code, status >= 500 ? "server_error" : "invalid_request_error"));
}

void reply(server::http::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void reply_error(server::http::Response& res, int status, const std::string& message, const std::string& code,
                 const std::string& param) {
  res.status = status;
  res.set_content(error_json(status, message, code, param), "application/json");
}

std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::vector<std::string> query_params(const std::string& query, const std::string& name) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < query.size()) {
    const size_t amp = std::min(query.find('&', pos), query.size());
    const std::string kv = query.substr(pos, amp - pos);
    const size_t eq = kv.find('=');
    if (url_decode(kv.substr(0, eq)) == name)
      out.push_back(eq == std::string::npos ? "" : url_decode(kv.substr(eq + 1)));
    pos = amp + 1;
  }
  return out;
}

std::string query_param(const std::string& query, const std::string& name) {
  const auto v = query_params(query, name);
  return v.empty() ? "" : v.front();
}

bool has_query_param(const std::string& query, const std::string& name) {
  return !query_params(query, name).empty();
}

int64_t query_int(const std::string& query, const std::string& name, int64_t def, int64_t lo, int64_t hi) {
  const std::string v = query_param(query, name);
  if (v.empty()) return def;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || x < lo || x > hi)
    throw HttpError{400,
                    strcat("query parameter '", name, "' must be an integer in [", lo, ", ", hi, "], got '", v, "'"),
                    "invalid_value", name};
  return x;
}

json parse_body(const std::string& body) {
  try {
    check_json_depth(body, "request body", kMaxJsonDepth, "studio");
  } catch (const Error& e) {
    throw HttpError{400, e.what(), "invalid_request", ""};
  }
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw HttpError{400, "the request body must be a JSON object", "invalid_request", ""};
  return j;
}

std::string str_field(const json& j, const char* key, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) throw HttpError{400, strcat("'", key, "' (a string) is required"), "invalid_request", key};
    return "";
  }
  if (!j[key].is_string()) throw HttpError{400, strcat("'", key, "' must be a string"), "invalid_request", key};
  return j[key].get<std::string>();
}

int64_t int_field(const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number_integer())
    throw HttpError{400, strcat("'", key, "' (an integer) is required"), "invalid_request", key};
  return j[key].get<int64_t>();
}

}  // namespace trinity::studio
