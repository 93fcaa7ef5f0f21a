// open_session / parse_protocol / fail_reason_name, and the helpers the session kinds share
// (session_common.h): reply parsing, the observation-text rule, error rewording with op and URL.
#include <cmath>

#include "env/session_common.h"

namespace trinity::env {

const char* fail_reason_name(FailReason r) {
  switch (r) {
    case FailReason::kConnect:
      return "connect";
    case FailReason::kTimeout:
      return "timeout";
    case FailReason::kClosed:
      return "closed";
    case FailReason::kProtocol:
      return "protocol";
    case FailReason::kServer:
      return "server";
  }
  return "unknown";
}

Protocol parse_protocol(const std::string& name) {
  if (name == "ws") return Protocol::kOpenEnvWs;
  if (name == "http") return Protocol::kOpenEnvHttp;
  if (name == "agentgym") return Protocol::kAgentGym;
  throw ConfigError("env", strcat("protocol '", name, "' is not known (expected ws | http | agentgym)"));
}

std::unique_ptr<Session> open_session(const SessionOptions& opts) {
  if (opts.url.empty()) throw ConfigError("env", "no environment URL given (SessionOptions::url is empty)");
  switch (opts.protocol) {
    case Protocol::kOpenEnvWs:
      return detail::open_openenv_ws(opts);
    case Protocol::kOpenEnvHttp:
      return detail::open_openenv_http(opts);
    case Protocol::kAgentGym:
      return detail::open_agentgym(opts);
  }
  TRINITY_ASSERT(false, "unhandled Protocol ", int(opts.protocol));
}

namespace detail {

std::string clip(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  return strcat(s.substr(0, n), "...(", s.size(), " bytes)");
}

std::string http_base(const std::string& url, bool drop_ws_suffix) {
  std::string u = url;
  while (!u.empty() && u.back() == '/') u.pop_back();
  if (drop_ws_suffix && u.size() > 3 && u.compare(u.size() - 3, 3, "/ws") == 0) u.resize(u.size() - 3);
  if (u.rfind("ws://", 0) == 0) u = "http://" + u.substr(5);
  return u;
}

void rethrow(const std::string& op, const std::string& url, const EnvError& e) {
  std::string detail = e.what();
  if (detail.rfind("[env] ", 0) == 0) detail.erase(0, 6);
  if (detail.rfind(url + ": ", 0) == 0) detail.erase(0, url.size() + 2);
  throw EnvError(e.reason(), strcat(op, " on ", url, ": ", detail));
}

json parse_reply(const std::string& op, const std::string& url, const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw EnvError(FailReason::kProtocol,
                   strcat(op, " on ", url, ": reply is not JSON (", e.what(), "): '", clip(text), "'"));
  }
}

json parse_object_arg(const std::string& what, const std::string& text) {
  if (text.empty()) return json::object();
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw ValueError("env", strcat(what, " is not JSON (", e.what(), "): '", clip(text), "'"));
  }
  if (!j.is_object()) throw ValueError("env", strcat(what, " must be a JSON object, got '", clip(text), "'"));
  return j;
}

std::string observation_text(const json& obs) {
  if (obs.is_string()) return obs.get<std::string>();
  if (obs.is_object())
    for (const char* key : {"observation", "text", "message", "prompt", "content", "echoed_message", "state", "output"})
      if (auto it = obs.find(key); it != obs.end() && it->is_string()) return it->get<std::string>();
  return obs.dump();
}

std::optional<double> reward_of(const std::string& op, const std::string& url, const json& reply, const char* field) {
  const auto it = reply.find(field);
  if (it == reply.end() || it->is_null()) return std::nullopt;
  if (it->is_boolean()) return it->get<bool>() ? 1.0 : 0.0;
  if (it->is_number()) {
    const double r = it->get<double>();
    if (std::isfinite(r)) return r;
  }
  throw EnvError(FailReason::kProtocol,
                 strcat(op, " on ", url, ": reply field '", field, "' is ", clip(it->dump(), 80),
                        ", expected a finite number or null; reply: '", clip(reply.dump()), "'"));
}

bool done_of(const std::string& op, const std::string& url, const json& reply) {
  const auto it = reply.find("done");
  if (it == reply.end())
    throw EnvError(FailReason::kProtocol,
                   strcat(op, " on ", url, ": reply has no 'done' field: '", clip(reply.dump()), "'"));
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_number_integer() && (it->get<int64_t>() == 0 || it->get<int64_t>() == 1)) return it->get<int64_t>() == 1;
  throw EnvError(FailReason::kProtocol, strcat(op, " on ", url, ": reply field 'done' is ", clip(it->dump(), 80),
                                               ", expected true or false; reply: '", clip(reply.dump()), "'"));
}

HttpResponse http_call(const std::string& op, const std::string& method, const std::string& url,
                       const std::string& body, double timeout_s, const Headers& headers, int allow_status) {
  HttpResponse r;
  try {
    r = http_request(method, url, body, timeout_s, headers);
  } catch (const EnvError& e) {
    rethrow(op, url, e);
  }
  if (r.status >= 400 && r.status != allow_status)
    throw EnvError(FailReason::kServer, strcat(op, " on ", url, ": HTTP ", r.status, ": '", clip(r.body), "'"));
  return r;
}

Headers auth_headers(const SessionOptions& opts) {
  Headers h;
  if (!opts.api_key.empty()) h.emplace_back("Authorization", "Bearer " + opts.api_key);
  return h;
}

}  // namespace detail
}  // namespace trinity::env
