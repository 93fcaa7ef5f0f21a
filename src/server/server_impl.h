// Internals of `trinity::server::Server` shared by its .cpp files (server.cpp: routing, chat and
// completions, metrics; server_responses.cpp: the Responses API): the Impl struct, the SSE stream
// driver's types and small helpers. Private to src/server: never included outside it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <span>
#include <tuple>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "server/http_server.h"
#include "server/protocol.h"
#include "server/responses.h"
#include "server/server.h"
#include "server/token_mask.h"
#include "server/tool_calls.h"

namespace trinity::server {

using namespace std::chrono_literals;
using engine::RequestHandle;

inline int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

inline std::string random_id(const char* prefix) {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> l(mu);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx%08llx", static_cast<unsigned long long>(gen()),
                static_cast<unsigned long long>(gen() & 0xffffffffULL));
  return std::string(prefix) + buf;
}

inline TokenText describe_token(const void* ctx, int32_t id) {
  const auto& tok = *static_cast<const tok::Tokenizer*>(ctx);
  TokenText t;
  if (id >= 0 && id < tok.vocab_size() && !tok.id_to_token(id).empty()) {
    const int32_t one[1] = {id};
    t.text = tok.decode(std::span<const int32_t>(one, 1));
    const std::string& b = tok.token_bytes(id);
    t.bytes.assign(b.begin(), b.end());
  } else {
    t.text = strcat("<id:", id, ">");  // an id the tokenizer lacks (model vocab padding)
  }
  return t;
}

// The field an engine ValueError names: "[sampling] temperature: ..." -> "temperature".
inline std::string param_of(const std::string& what) {
  const auto rb = what.find("] ");
  if (rb == std::string::npos) return "";
  const auto colon = what.find(':', rb + 2);
  if (colon == std::string::npos) return "";
  const std::string p = what.substr(rb + 2, colon - rb - 2);
  return p.find(' ') == std::string::npos ? p : "";
}

inline void send_json(http::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

inline void send_error(http::Response& res, const ApiError& e) {
  send_json(res, e.status, error_body(e));
}

// Streamed events of one HTTP request (possibly several engine requests), shared with the
// engine's callbacks; choice = offset of the engine request + sample index.
struct StreamQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<int64_t, engine::StreamEvent>> q;
};

struct Server::Impl {
  std::shared_ptr<engine::Engine> engine;
  std::shared_ptr<const tok::Tokenizer> tok;
  std::shared_ptr<const tok::ChatFormatter> chat;
  std::vector<int32_t> stop_ids;
  ServerOptions opts;
  std::unique_ptr<http::Server> http;
  struct Route {
    std::string method, path;  // path ending in '/': a prefix
    std::function<void(const http::Request&, http::Response&)> fn;
    bool needs_key = false;  // an ExtraRoute with needs_key (the /v1/ routes are checked by prefix)
  };
  std::vector<Route> routes;
  std::mutex metrics_mu;
  std::map<std::tuple<std::string, std::string, int>, int64_t> by_route;  // (route, method, status)
  double queue_seconds = 0, duration_seconds = 0;
  int64_t timed = 0;

  const Route* find_route(const std::string& method, const std::string& path, std::string* allow) const {
    for (const auto& r : routes) {
      const bool match =
          r.path.back() == '/' ? path.size() > r.path.size() && path.rfind(r.path, 0) == 0 : path == r.path;
      if (!match) continue;
      if (r.method == method) return &r;
      *allow += (allow->empty() ? "" : ", ") + r.method;
    }
    return nullptr;
  }
  std::string route_label(const std::string& path) const {
    for (const auto& r : routes) {
      if (r.path.back() == '/' && path.size() > r.path.size() && path.rfind(r.path, 0) == 0) return r.path + "{id}";
      if (path == r.path) return r.path;
    }
    return "(unmatched)";
  }
  void dispatch(const http::Request& req, http::Response& res);
  void completed(const http::Request& req, const http::Response& res);
  std::string metrics_text();
  int64_t created = unix_now();
  std::atomic<bool> stopping{false};
  std::mutex inflight_mu;
  struct Inflight {
    RequestHandle handle;
    std::string api_key;  // the recording key it was made with ("" without recording)
  };
  std::map<uint64_t, Inflight> inflight;
  uint64_t next_key = 0;
  std::atomic<int64_t> n_requests{0}, n_errors{0}, n_cancelled{0};

  TokenDescriber describer() const { return TokenDescriber{tok.get(), &describe_token}; }

  // Registers engine handles so stop() (and cancel_key() for `api_key`) can cancel them.
  uint64_t track(const std::vector<RequestHandle>& hs, const std::string& api_key = "") {
    std::lock_guard<std::mutex> l(inflight_mu);
    const uint64_t first = next_key;
    for (const auto& h : hs) inflight.emplace(next_key++, Inflight{h, api_key});
    if (stopping)
      for (auto h : hs) h.cancel();
    return first;
  }
  void untrack(uint64_t first, size_t n) {
    std::lock_guard<std::mutex> l(inflight_mu);
    for (size_t i = 0; i < n; ++i) inflight.erase(first + i);
  }

  void check_model(const std::string& model) const {
    if (!model.empty() && model != opts.model_name && !opts.any_model)
      throw ApiError(404, strcat("The model '", model, "' does not exist; this server serves '", opts.model_name, "'"),
                     "model", "model_not_found");
  }

  // Adds the server's stop ids (tokenizer EOS) unless the client asked to ignore EOS.
  // The client's own stop_token_ids must be in the vocabulary (400 naming the parameter).
  void add_stop_ids(engine::SamplingParams& p) const {
    check_ids(p.stop_token_ids, "stop_token_ids");
    if (p.ignore_eos) return;
    for (int32_t id : stop_ids)
      if (std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), id) == p.stop_token_ids.end())
        p.stop_token_ids.push_back(id);
  }

  // Constrained decoding for response_format: the vocabulary trie is built once, on first use.
  std::once_flag trie_once;
  std::shared_ptr<const TokenTrie> trie;
  void attach_grammar(CommonRequest& r) {
    if (!r.grammar) return;
    if (!tok) throw ApiError(400, "response_format needs the model's tokenizer", "response_format");
    std::call_once(trie_once, [&] { trie = std::make_shared<TokenTrie>(*tok); });
    std::vector<int32_t> end = r.sampling.stop_token_ids;
    for (int32_t id : engine->eos_ids()) end.push_back(id);
    r.sampling.constraint = std::make_shared<GrammarConstraintFactory>(r.grammar, trie, std::move(end));
  }

  void check_ids(const std::vector<int32_t>& ids, const std::string& param) const {
    const int64_t v = engine->config().vocab_size;
    for (int32_t t : ids)
      if (t < 0 || t >= v) throw ApiError(400, strcat("token id ", t, " is out of range [0, ", v, ")"), param);
  }

  std::vector<RequestHandle> submit_all(const std::vector<std::vector<int32_t>>& prompts,
                                        const engine::SamplingParams& p, const std::shared_ptr<StreamQueue>& queue) {
    std::vector<RequestHandle> hs;
    try {
      for (size_t i = 0; i < prompts.size(); ++i) {
        engine::StreamCallback cb;
        if (queue) {
          const int64_t offset = static_cast<int64_t>(i) * p.n;
          cb = [queue, offset](const engine::StreamEvent& e) {
            {
              std::lock_guard<std::mutex> l(queue->mu);
              queue->q.emplace_back(offset + e.index, e);
            }
            queue->cv.notify_one();
          };
        }
        hs.push_back(engine->submit(prompts[i], p, std::move(cb)));
      }
    } catch (const ValueError& e) {
      for (auto& h : hs) h.cancel();
      throw ApiError(400, e.what(), param_of(e.what()));
    }
    return hs;
  }

  // Waits for all handles (cancelling them when the server stops); errors become ApiErrors.
  std::vector<engine::GenerateResult> wait_all(std::vector<RequestHandle>& hs, const std::string& api_key = "") {
    const uint64_t key = track(hs, api_key);
    std::vector<engine::GenerateResult> out;
    for (auto& h : hs) {
      while (!h.wait_for(100ms))
        if (stopping) h.cancel();
      out.push_back(h.wait());
    }
    untrack(key, hs.size());
    for (const auto& r : out) {
      if (!r.error.empty()) {
        if (r.error.find("KV pages") != std::string::npos)
          throw ApiError(400, r.error, "max_tokens", "kv_cache_exceeded");
        throw ApiError(500, r.error, "", "", "server_error");
      }
    }
    for (const auto& r : out)
      for (const auto& c : r.completions)
        if (c.finish_reason == "cancelled" && stopping)
          throw ApiError(503, "the server is shutting down", "", "", "server_error");
    return out;
  }

  // The bearer key of a request ("" when absent or not a bearer token).
  static std::string bearer_key(const http::Request& req) {
    const std::string h = req.header("Authorization");
    return h.rfind("Bearer ", 0) == 0 ? h.substr(7) : "";
  }
  // The recording scope of a request; nullopt on a server without recording. A recording server
  // answers a key it does not (or no longer) knows with 401.
  struct Scope {
    std::optional<Recording> rec;
    std::string key;
    const engine::SamplingParams* defaults() const { return rec ? rec->defaults.get() : nullptr; }
    // The seed of a request that has none (Recording::seeded_calls); unchanged without a default seed.
    void seed(engine::SamplingParams& p) const {
      const engine::SamplingParams* d = defaults();
      if (p.seed || !d || !d->seed) return;
      p.seed = *d->seed + 7919 * rec->seeded_calls->fetch_add(1);
    }
  };
  Scope scope_of(const http::Request& req) const {
    Scope s;
    if (!opts.recording_for_key) return s;
    s.key = bearer_key(req);
    s.rec = opts.recording_for_key(s.key);
    if (!s.rec || !s.rec->history)
      throw ApiError(401,
                     s.key.empty() ? "Missing API key: send 'Authorization: Bearer <key>'"
                                   : "Incorrect API key provided (or its run has ended)",
                     "", "invalid_api_key");
    return s;
  }

  struct ChatPrompt {
    std::vector<int32_t> ids;
    std::string render_key;   // fresh rendering (recording with add_generation_prompt only)
    std::string spliced_via;  // id of the call whose sampled ids the prompt reuses
  };
  // The chat request's prompt ids; with a recording scope, the model's earlier turns keep their
  // sampled ids (tok::ChatHistory::splice).
  ChatPrompt chat_prompt(const ChatRequest& r, const Scope& scope = {}) const {
    tok::ChatOptions o;
    o.add_generation_prompt = r.add_generation_prompt;
    o.enable_thinking = r.enable_thinking;
    o.tools = r.tools;
    o.extra = r.template_kwargs;
    ChatPrompt p;
    try {
      if (scope.rec && r.add_generation_prompt) {
        // Render once: the text is the call's render_key; it is tokenized only when no splice applies.
        p.render_key = chat->render(r.messages, o);
        std::string why;
        if (auto sp = scope.rec->history->splice(*chat, r.messages, o, &why)) {
          p.ids = std::move(sp->ids);
          p.spliced_via = std::move(sp->via);
        } else {
          if (scope.rec->history->size() > 0) log::debug("serve: prompt not spliced: ", why);
          p.ids = chat->tokenizer().encode(p.render_key);
        }
      } else {
        p.ids = chat->encode(r.messages, o, false).ids;
      }
    } catch (const ApiError&) {
      throw;
    } catch (const Error& e) {
      throw ApiError(400, strcat("the chat template failed on these messages: ", e.what()), "messages");
    }
    return p;
  }

  // Records every sample of a finished request into the scope's history (no-op without one).
  // `parse_tools`: the answer's tool calls are parsed out of the text as the client saw them.
  void record(const Scope& scope, const std::string& id, const char* endpoint,
              const std::vector<std::vector<int32_t>>& prompts, const std::vector<engine::GenerateResult>& results,
              double start, const ChatPrompt* chat_prompt = nullptr, bool parse_tools = false) const;

  void handle_chat(const http::Request& req, http::Response& res);
  void handle_completions(const http::Request& req, http::Response& res);
  void handle_responses(const http::Request& req, http::Response& res);
  // A failure after the stream started (the engine's error text, 400 for KV-cache overflow else 500).
  using StreamErrorFn = std::function<void(const ApiError& e, std::vector<std::string>& out)>;
  void stream(http::Response& res, std::vector<RequestHandle> hs, std::shared_ptr<StreamQueue> queue,
              std::function<void(std::vector<std::string>& out)> start,
              std::function<void(int64_t choice, const engine::StreamEvent& e, std::vector<std::string>& out)> on_event,
              std::function<void(int64_t choice, const std::string& reason, std::vector<std::string>& out)> on_end,
              std::function<void(const std::vector<engine::GenerateResult>&, std::vector<std::string>& out)> finish,
              int64_t n_choices, StreamErrorFn on_error = nullptr, bool done_marker = true,
              const std::string& api_key = "");

  // Output items of earlier responses, for `item_reference` input items (bounded, in memory).
  ResponseItemStore response_items;
};

}  // namespace trinity::server
