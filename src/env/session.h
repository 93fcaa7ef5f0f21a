// env::Session: one episode's connection to an environment server (issue 13). Workflows see only
// this interface, never the transport: OpenEnv over a WebSocket (/ws, one environment instance per
// connection), OpenEnv over HTTP (POST /reset, POST /step), or an AgentGym server (/create, /reset,
// /step with an env id). Every call has a deadline (SessionOptions::timeout_s); nothing blocks
// forever. Errors are env::EnvError with a reason class the workflow counts failures by.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/error.h"

namespace trinity::env {

// Why an environment call failed; the workflow counts failed runs by these names
// (rollout/failed/env_<reason>).
enum class FailReason {
  kConnect,   // connection refused / host unreachable / handshake rejected
  kTimeout,   // no (complete) reply before the deadline
  kClosed,    // the server closed the connection or died mid-episode
  kProtocol,  // a malformed reply: not JSON, missing fields, bad WebSocket frame
  kServer,    // the server answered with an error (HTTP status >= 400, {"type":"error"})
};
const char* fail_reason_name(FailReason r);  // "connect", "timeout", "closed", "protocol", "server"

class EnvError : public Error {
 public:
  EnvError(FailReason reason, const std::string& message) : Error("env", message), reason_(reason) {}
  FailReason reason() const { return reason_; }
  // Worth retrying with a new session (connect / timeout / closed); a protocol or server error is not.
  bool transient() const {
    return reason_ == FailReason::kConnect || reason_ == FailReason::kTimeout || reason_ == FailReason::kClosed;
  }

 private:
  FailReason reason_;
};

// What reset / step return. observation_json: the observation object as the server sent it
// (OpenEnv: the "observation" object; AgentGym: {"observation": <text>} when it sends a string).
struct StepResult {
  std::string observation_json;  // a JSON object
  std::string observation_text;  // the text a model reads: its text field ("observation", "text",
                                 // "message", "prompt", "content", "echoed_message", ...) when it is a
                                 // string, else the JSON
  std::optional<double> reward;  // null / absent = no reward on this step
  bool done = false;
  std::string raw_json;  // the whole reply, for logs
};

enum class Protocol { kOpenEnvWs, kOpenEnvHttp, kAgentGym };

struct SessionOptions {
  std::string url;  // base URL: "http://host:port" (ws:// accepted for kOpenEnvWs)
  Protocol protocol = Protocol::kOpenEnvWs;
  double timeout_s = 60;     // deadline of each call (connect, reset, step, close)
  std::string api_key;       // sent as "Authorization: Bearer <key>" when not empty
  std::string agentgym_env;  // AgentGym: the environment name, for the field names it uses ("" = guess)
};

class Session {
 public:
  virtual ~Session() = default;
  // Starts an episode. reset_args_json: a JSON object of reset fields (OpenEnv: seed, episode_id and
  // environment-specific kwargs; AgentGym: the task fields, e.g. {"game": 3} or {"data_idx": 3}).
  virtual StepResult reset(const std::string& reset_args_json) = 0;
  // One action: a JSON object of action fields (OpenEnv: the Action model's fields; AgentGym:
  // {"action": "<text>"}).
  virtual StepResult step(const std::string& action_json) = 0;
  // The environment's JSON schemas {"action": {...}, "observation": {...}, "state": {...}} from GET
  // /schema ("" when the server has none).
  virtual std::string schema() = 0;
  // The environment's state as a JSON object (OpenEnv: the "state" message / GET /state; AgentGym: GET
  // /detail or /state where the server has one, else "").
  virtual std::string state() = 0;
  // Ends the session (WebSocket close message + close frame; AgentGym: POST /close when the server
  // has it). Never throws; safe to call twice; the destructor calls it.
  virtual void close() noexcept = 0;
};

// Connects (WebSocket handshake / AgentGym /create). Throws EnvError.
std::unique_ptr<Session> open_session(const SessionOptions& opts);

// Parses "ws" | "http" | "agentgym" (ConfigError naming the value and what is accepted).
Protocol parse_protocol(const std::string& name);

}  // namespace trinity::env
