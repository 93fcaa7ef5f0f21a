// Helpers for the studio's JSON handlers (and `trinity data annotate`, which shares its API):
// OpenAI-shaped errors, query parameters, JSON bodies. A handler throws HttpError for a bad request;
// the router answers it with its status and body. Studio-internal (includes nlohmann/json).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/http_server.h"

namespace trinity::studio {

using json = nlohmann::json;

// An answer other than 200: status, message, OpenAI `code` and `param` ("" = null).
struct HttpError {
  int status = 400;
  std::string message, code, param;
};

std::string error_json(int status, const std::string& message, const std::string& code, const std::string& param = "");
void reply(server::http::Response& res, int status, const json& body);
void reply_error(server::http::Response& res, int status, const std::string& message, const std::string& code,
                 const std::string& param = "");

std::string url_decode(const std::string& s);
std::string url_encode(const std::string& s);
// The first value of `name` in a query string ("" when absent); every value of it.
std::string query_param(const std::string& query, const std::string& name);
std::vector<std::string> query_params(const std::string& query, const std::string& name);
bool has_query_param(const std::string& query, const std::string& name);
// An integer query parameter; `def` when absent; HttpError 400 naming it when not an integer in [lo, hi].
int64_t query_int(const std::string& query, const std::string& name, int64_t def, int64_t lo, int64_t hi);

// The body as a JSON object (HttpError 400 otherwise; nesting depth limited).
json parse_body(const std::string& body);
// A required / optional string field ("" when absent and optional); HttpError 400 naming it.
std::string str_field(const json& j, const char* key, bool required);
int64_t int_field(const json& j, const char* key);

}  // namespace trinity::studio
