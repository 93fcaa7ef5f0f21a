// OpenAI-compatible HTTP server over one generation Engine (`trinity serve`). Every request, from
// any number of concurrent connections, is submitted to the same Engine, so concurrent clients are
// batched together by its scheduler. Endpoints: GET /health, GET /v1/models, POST /v1/completions,
// POST /v1/chat/completions, GET /metrics (see docs/serving.md). A client that disconnects mid-stream cancels its
// request; stop() cancels everything in flight and makes run() return. HTTP/1.1 itself (deadlines,
// size limits, keep-alive, chunked streams) is server/http_server.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "tokenizer/chat.h"
#include "tokenizer/chat_history.h"

namespace trinity::server {

// A recording scope (an explorer run's endpoint key, a serve-mode client): every model call made with
// its API key is recorded into `history` (chat, completions and responses; one RecordedCall per
// sample), and chat prompts reuse the sampled ids of the model's earlier turns (ChatHistory::splice).
struct Recording {
  std::shared_ptr<tok::ChatHistory> history;
  // Sampling for the fields a chat / completions request leaves out (temperature, top_p, top_k,
  // min_p, repetition_penalty, max_tokens capped to the context, min_tokens); null: OpenAI defaults.
  std::shared_ptr<const engine::SamplingParams> defaults;
  // Called with each call after it is added to `history` (serve mode persists it); may throw, which
  // fails the request with 500.
  std::function<void(const tok::RecordedCall&)> on_record;
  // With defaults->seed set, a request without a seed gets defaults->seed + 7919 * (the number of such
  // requests before it on this key): a run's calls sample reproducibly (explorer.rollout_model.seed),
  // as the in-process EngineClient's do.
  std::shared_ptr<std::atomic<uint64_t>> seeded_calls = std::make_shared<std::atomic<uint64_t>>(0);
};

// A route added by the embedding program (serve mode's /feedback, /commit, /metrics). Routes are
// matched before the built-in ones, so an extra route can replace one. `body` is the request body;
// the handler returns (HTTP status, JSON body) or throws (std::invalid_argument -> 400 with its
// message; anything else -> 500).
struct ExtraRoute {
  std::string method, path;
  bool needs_key = true;  // checked against api_key / recording_for_key like /v1/ routes
  std::function<std::pair<int, std::string>(const std::string& body, const std::string& accept)> handler;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                       // 0: any free port (see Server::bind)
  std::string api_key;                   // empty: no authentication
  std::string model_name = "trinity";    // the id in /v1/models and responses
  size_t max_body_bytes = size_t{8} << 20;  // larger request bodies get 413
  int threads = 256;                        // HTTP worker threads (requests handled at once; = engine max_running)
  std::string allow_origin;                 // non-empty: CORS Access-Control-Allow-Origin value ("*" or an origin)
  int64_t header_timeout_ms = 10000;        // a request's headers must arrive within this (total), else 408
  int64_t body_timeout_ms = 60000;          // its body within this after the headers (total), else 408
  int64_t idle_timeout_ms = 30000;          // an idle keep-alive connection is closed after this
  bool access_log = true;                   // one info line per request (no prompt text)
  // Recording endpoints: resolves the bearer key of a /v1/ request to its recording scope; a key it
  // does not know (nullopt, e.g. a run that ended) is answered 401. Replaces api_key when set.
  std::function<std::optional<Recording>(const std::string& key)> recording_for_key;
  bool any_model = false;  // accept any `model` name (agents written for other APIs)
  std::vector<ExtraRoute> routes;
};

class Server {
 public:
  // `stop_ids`: token ids that end a generation besides the model's EOS (the tokenizer's eos_token).
  Server(std::shared_ptr<engine::Engine> engine, std::shared_ptr<const tok::Tokenizer> tokenizer,
         std::shared_ptr<const tok::ChatFormatter> chat, std::vector<int32_t> stop_ids, ServerOptions opts);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket; returns the port (the chosen one when opts.port is 0).
  // Throws IoError when the address cannot be bound.
  int bind();
  // Serves until stop(); call after bind().
  void run();
  // Thread-safe: cancels in-flight requests and stops the listener.
  void stop();
  // Thread-safe: cancels the in-flight requests made with API key `key` (a run that was cancelled).
  void cancel_key(const std::string& key);
  // The Prometheus text of GET /metrics (for an ExtraRoute that replaces /metrics).
  std::string metrics_text();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace trinity::server
