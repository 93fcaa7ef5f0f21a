// Internal to the env layer (included by session .cpp files only, never by a public header): the JSON
// and error helpers the three session kinds share. Messages read "[env] <op> on <url>: <detail>".
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "env/http_client.h"
#include "env/session.h"

namespace trinity::env::detail {

using nlohmann::json;

// At most n bytes of s, marked when cut (replies quoted in messages).
std::string clip(std::string_view s, size_t n = 300);

// "http://h:p/" -> "http://h:p"; "ws://h:p/ws" -> "http://h:p" (ws_path_suffix: drop a trailing "/ws").
std::string http_base(const std::string& url, bool drop_ws_suffix);

// Rethrows a lower-level EnvError as "<op> on <url>: <detail>", keeping its reason.
[[noreturn]] void rethrow(const std::string& op, const std::string& url, const EnvError& e);

// Parses a reply; kProtocol "<op> on <url>: reply is not JSON (...): <clipped reply>".
json parse_reply(const std::string& op, const std::string& url, const std::string& text);

// Parses caller-supplied JSON (reset args, action) that must be an object; "" means {}. ValueError.
json parse_object_arg(const std::string& what, const std::string& text);

// The text a model reads from an observation (session.h's rule).
std::string observation_text(const json& observation);

// A reward value: null / absent -> nullopt; number or bool -> value; anything else kProtocol.
std::optional<double> reward_of(const std::string& op, const std::string& url, const json& reply, const char* field);

// reply["done"] as bool; kProtocol naming the field when absent or not a bool.
bool done_of(const std::string& op, const std::string& url, const json& reply);

// An HTTP request whose transport failures are rethrown as "<op> on <url>: ..."; a status >= 400 is
// kServer quoting the body unless allow_status says to return it.
HttpResponse http_call(const std::string& op, const std::string& method, const std::string& url,
                       const std::string& body, double timeout_s, const Headers& headers, int allow_status = 0);

Headers auth_headers(const SessionOptions& opts);

std::unique_ptr<Session> open_openenv_ws(const SessionOptions& opts);
std::unique_ptr<Session> open_openenv_http(const SessionOptions& opts);
std::unique_ptr<Session> open_agentgym(const SessionOptions& opts);

}  // namespace trinity::env::detail
