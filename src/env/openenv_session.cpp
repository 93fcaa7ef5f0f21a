// OpenEnv sessions (meta-pytorch/OpenEnv, src/openenv/core/env_server/http_server.py and types.py).
// WebSocket form (/ws): one environment instance per connection, messages {"type":"reset","data":{..}},
// {"type":"step","data":{<action>}}, {"type":"state"}, {"type":"close"}; replies {"type":"observation",
// "data":{"observation":{..},"reward":r|null,"done":b}}, {"type":"state","data":{..}} or {"type":"error",
// "data":{"message":..,"code":..}}. HTTP form: POST /reset (the args) and POST /step {"action":{..}}
// answer {"observation","reward","done"} — stateless: the server builds a fresh environment for every
// request, so a step does not continue the reset's episode; use it only for single-step environments.
// After a transport failure (timeout, close, bad frame) a WebSocket session is unusable: a late reply
// must never be taken for the answer to the next request.
#include <algorithm>

#include "env/session_common.h"
#include "env/websocket.h"

namespace trinity::env::detail {

namespace {

// {"observation": {...}, "reward": r, "done": b} (both forms) -> StepResult.
StepResult openenv_result(const std::string& op, const std::string& url, const json& data, std::string raw) {
  if (!data.is_object())
    throw EnvError(FailReason::kProtocol, strcat(op, " on ", url, ": reply data is not an object: '", clip(raw), "'"));
  StepResult r;
  const auto obs = data.find("observation");
  if (obs == data.end() || obs->is_null())
    throw EnvError(FailReason::kProtocol,
                   strcat(op, " on ", url, ": reply has no 'observation' field: '", clip(raw), "'"));
  r.observation_json = obs->is_object() ? obs->dump() : json{{"observation", *obs}}.dump();
  r.observation_text = observation_text(*obs);
  r.reward = reward_of(op, url, data, "reward");
  r.done = done_of(op, url, data);
  r.raw_json = std::move(raw);
  return r;
}

std::string schema_of(const std::string& base, double timeout_s, const Headers& headers) {
  const std::string url = base + "/schema";
  HttpResponse r = http_call("schema", "GET", url, "", timeout_s, headers, 404);
  if (r.status == 404) return "";
  const json j = parse_reply("schema", url, r.body);
  if (!j.is_object())
    throw EnvError(FailReason::kProtocol, strcat("schema on ", url, ": reply is not an object: '", clip(r.body), "'"));
  return j.dump();
}

class OpenEnvWsSession final : public Session {
 public:
  explicit OpenEnvWsSession(const SessionOptions& opts)
      : opts_(opts), base_(http_base(opts.url, true)), url_("ws://" + base_.substr(base_.find("://") + 3) + "/ws") {
    try {
      ws_ = WebSocket::connect(url_, opts.timeout_s, auth_headers(opts));
    } catch (const EnvError& e) {
      rethrow("connect", url_, e);
    }
  }
  ~OpenEnvWsSession() override { close(); }

  StepResult reset(const std::string& reset_args_json) override {
    const json msg{{"type", "reset"}, {"data", parse_object_arg("reset args", reset_args_json)}};
    auto [data, raw] = request("reset", msg, "observation");
    return openenv_result("reset", url_, data, std::move(raw));
  }

  StepResult step(const std::string& action_json) override {
    const json msg{{"type", "step"}, {"data", parse_object_arg("action", action_json)}};
    auto [data, raw] = request("step", msg, "observation");
    return openenv_result("step", url_, data, std::move(raw));
  }

  std::string state() override {
    auto [data, raw] = request("state", json{{"type", "state"}}, "state");
    if (!data.is_object())
      throw EnvError(FailReason::kProtocol,
                     strcat("state on ", url_, ": state data is not an object: '", clip(raw), "'"));
    return data.dump();
  }

  std::string schema() override { return schema_of(base_, opts_.timeout_s, auth_headers(opts_)); }

  void close() noexcept override {
    if (!ws_) return;
    try {
      if (ws_->is_open()) ws_->send_text(json{{"type", "close"}}.dump(), std::min(opts_.timeout_s, 1.0));
    } catch (...) {
      // The server may already be gone; the close frame below is best effort too.
    }
    ws_->close(1000, std::min(opts_.timeout_s, 1.0));
    ws_.reset();
  }

 private:
  // Sends one message and reads its reply: (data, raw). {"type":"error"} -> kServer.
  std::pair<json, std::string> request(const std::string& op, const json& msg, const char* want_type) {
    if (!ws_ || !broken_.empty())
      throw EnvError(FailReason::kClosed, strcat(op, " on ", url_, ": the session is closed",
                                                 broken_.empty() ? "" : " after an earlier failure (" + broken_ + ")"));
    std::string raw;
    try {
      ws_->send_text(msg.dump(), opts_.timeout_s);
      raw = ws_->receive_text(opts_.timeout_s);
    } catch (const EnvError& e) {
      broken_ = strcat(fail_reason_name(e.reason()), " during ", op);
      ws_->close(1000, 0.2);
      rethrow(op, url_, e);
    }
    json reply = parse_reply(op, url_, raw);
    if (!reply.is_object() || !reply.contains("type") || !reply["type"].is_string())
      throw EnvError(FailReason::kProtocol,
                     strcat(op, " on ", url_, ": reply has no string 'type' field: '", clip(raw), "'"));
    const std::string type = reply["type"].get<std::string>();
    json data = reply.contains("data") ? reply["data"] : json();
    if (type == "error") {
      std::string message = "(no message)", code = "(no code)";
      if (data.is_object()) {
        if (auto it = data.find("message"); it != data.end())
          message = it->is_string() ? it->get<std::string>() : it->dump();
        if (auto it = data.find("code"); it != data.end()) code = it->is_string() ? it->get<std::string>() : it->dump();
      }
      throw EnvError(FailReason::kServer,
                     strcat(op, " on ", url_, ": the server answered an error: ", clip(message), " (code ", code, ")"));
    }
    if (type != want_type)
      throw EnvError(FailReason::kProtocol, strcat(op, " on ", url_, ": reply type '", clip(type, 60), "', expected '",
                                                   want_type, "': '", clip(raw), "'"));
    if (!reply.contains("data"))
      throw EnvError(FailReason::kProtocol, strcat(op, " on ", url_, ": reply has no 'data' field: '", clip(raw), "'"));
    return {std::move(data), std::move(raw)};
  }

  SessionOptions opts_;
  std::string base_;  // http://host:port (for /schema)
  std::string url_;   // ws://host:port/ws
  std::unique_ptr<WebSocket> ws_;
  std::string broken_;  // why the session is unusable ("" = fine)
};

class OpenEnvHttpSession final : public Session {
 public:
  explicit OpenEnvHttpSession(const SessionOptions& opts) : opts_(opts), base_(http_base(opts.url, true)) {
    // Fails early on a dead server; a server without /health (404) is fine.
    http_call("connect", "GET", base_ + "/health", "", opts_.timeout_s, auth_headers(opts_), 404);
  }

  StepResult reset(const std::string& reset_args_json) override {
    return post("reset", "/reset", parse_object_arg("reset args", reset_args_json));
  }

  StepResult step(const std::string& action_json) override {
    return post("step", "/step", json{{"action", parse_object_arg("action", action_json)}});
  }

  std::string state() override {
    const std::string url = base_ + "/state";
    HttpResponse r = http_call("state", "GET", url, "", opts_.timeout_s, auth_headers(opts_), 404);
    if (r.status == 404) return "";
    const json j = parse_reply("state", url, r.body);
    if (!j.is_object())
      throw EnvError(FailReason::kProtocol, strcat("state on ", url, ": reply is not an object: '", clip(r.body), "'"));
    return j.dump();
  }

  std::string schema() override { return schema_of(base_, opts_.timeout_s, auth_headers(opts_)); }
  void close() noexcept override {}

 private:
  StepResult post(const std::string& op, const std::string& path, const json& body) {
    const std::string url = base_ + path;
    HttpResponse r = http_call(op, "POST", url, body.dump(), opts_.timeout_s, auth_headers(opts_));
    const json reply = parse_reply(op, url, r.body);
    return openenv_result(op, url, reply, std::move(r.body));
  }

  SessionOptions opts_;
  std::string base_;
};

}  // namespace

std::unique_ptr<Session> open_openenv_ws(const SessionOptions& opts) {
  return std::make_unique<OpenEnvWsSession>(opts);
}

std::unique_ptr<Session> open_openenv_http(const SessionOptions& opts) {
  return std::make_unique<OpenEnvHttpSession>(opts);
}

}  // namespace trinity::env::detail
