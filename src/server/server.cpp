// HTTP layer of `trinity serve` (see server.h): routing, API-key check, JSON errors for every
// failure (the server never dies on a bad request), prompt construction (chat template / text /
// token ids), submission to the Engine, and non-streaming and SSE streaming responses.
// Streams end with `data: [DONE]`; a failed write (client gone) cancels the engine requests.
// The Impl struct and helpers are in server_impl.h; the Responses API in server_responses.cpp.
#include <nlohmann/json.hpp>

#include "engine/recorded_call.h"
#include "server/server_impl.h"

namespace trinity::server {

// Generic SSE driver: `start` frames first, then `on_event` per engine event; `on_end` for a
// choice that ended without a final event (failed or cancelled before it ran); `finish` after all
// requests are done. Each string pushed into `out` is one `data:` frame, or a whole SSE event when it
// starts with "event: " (the Responses API), or a comment when it starts with ':'. `on_error` frames
// a failure (default: a `data: {"error": ...}` frame); `done_marker` ends the stream with [DONE].
void Server::Impl::stream(
    http::Response& res, std::vector<RequestHandle> hs, std::shared_ptr<StreamQueue> queue,
    std::function<void(std::vector<std::string>&)> start,
    std::function<void(int64_t, const engine::StreamEvent&, std::vector<std::string>&)> on_event,
    std::function<void(int64_t, const std::string&, std::vector<std::string>&)> on_end,
    std::function<void(const std::vector<engine::GenerateResult>&, std::vector<std::string>&)> finish,
    int64_t n_choices, StreamErrorFn on_error, bool done_marker, const std::string& api_key) {
  auto handles = std::make_shared<std::vector<RequestHandle>>(std::move(hs));
  const uint64_t key = track(*handles, api_key);
  auto cancel_all = [handles] {
    for (auto& h : *handles) h.cancel();
  };
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, resp = &res, handles, queue, start, on_event, on_end, finish, n_choices, on_error, done_marker,
       cancel_all](http::DataSink& sink) {
        auto write = [&](const std::vector<std::string>& frames) {
          for (const auto& f : frames) {
            const bool raw = f[0] == ':' || f.rfind("event: ", 0) == 0;
            const std::string s = raw ? f + "\n\n" : "data: " + f + "\n\n";
            if (!sink.write(s.data(), s.size())) return false;
          }
          return true;
        };
        try {
          std::vector<std::string> out;
          std::vector<bool> ended(static_cast<size_t>(n_choices), false);
          start(out);
          if (!write(out)) throw std::runtime_error("client disconnected");
          auto last_write = std::chrono::steady_clock::now();
          for (;;) {
            std::deque<std::pair<int64_t, engine::StreamEvent>> events;
            {
              std::unique_lock<std::mutex> l(queue->mu);
              queue->cv.wait_for(l, 200ms, [&] { return !queue->q.empty(); });
              events.swap(queue->q);
            }
            if (stopping) cancel_all();
            out.clear();
            for (const auto& [choice, e] : events) {
              on_event(choice, e, out);
              if (e.finished) ended[static_cast<size_t>(choice)] = true;
            }
            const bool all_done = std::all_of(handles->begin(), handles->end(), [](const RequestHandle& h) { return h.done(); });
            if (events.empty() && std::chrono::steady_clock::now() - last_write > 1s)
              out.push_back(": keep-alive");  // detects a client that went away while queued
            if (!out.empty()) {
              if (!write(out)) throw std::runtime_error("client disconnected");
              last_write = std::chrono::steady_clock::now();
            }
            if (all_done) {
              std::lock_guard<std::mutex> l(queue->mu);
              if (queue->q.empty()) break;
            }
          }
          std::vector<engine::GenerateResult> results;
          for (auto& h : *handles) results.push_back(h.wait());
          out.clear();
          int64_t choice = 0;
          for (const auto& r : results)
            for (const auto& c : r.completions) {
              if (!ended[static_cast<size_t>(choice)]) on_end(choice, c.finish_reason, out);
              ++choice;
            }
          for (const auto& r : results)
            if (!r.error.empty()) {
              const ApiError err(r.error.find("KV pages") != std::string::npos ? 400 : 500, r.error);
              if (on_error)
                on_error(err, out);
              else
                out.push_back(error_body(err));
              break;
            }
          int64_t toks = 0;
          for (const auto& r : results)
            for (const auto& c : r.completions) toks += static_cast<int64_t>(c.token_ids.size());
          resp->completion_tokens = toks;  // for the access log
          finish(results, out);
          if (done_marker) out.push_back("[DONE]");
          if (!write(out)) throw std::runtime_error("client disconnected");
          sink.done();
          return true;
        } catch (const std::exception& e) {
          cancel_all();
          ++n_cancelled;
          log::info("serve: stream ended early (", e.what(), "); request cancelled");
          return false;
        }
      },
      [this, key, n = handles->size(), cancel_all](bool success) {
        if (!success) cancel_all();
        untrack(key, n);
      });
}

void Server::Impl::record(const Scope& scope, const std::string& id, const char* endpoint,
                          const std::vector<std::vector<int32_t>>& prompts,
                          const std::vector<engine::GenerateResult>& results, double start, const ChatPrompt* cp,
                          bool parse_tools) const {
  if (!scope.rec) return;
  const double seconds = std::max(0.0, wall_seconds() - start);
  for (size_t p = 0; p < results.size() && p < prompts.size(); ++p) {
    const auto& comps = results[p].completions;
    for (size_t i = 0; i < comps.size(); ++i) {
      const engine::Completion& c = comps[i];
      if (c.token_ids.empty()) continue;
      tok::RecordedCall rc = engine::recorded_call(c, prompts[p], id, static_cast<int64_t>(p * comps.size() + i), start,
                                                   seconds, endpoint);
      if (cp) {
        rc.spliced = !cp->spliced_via.empty();
        rc.render_key = cp->render_key;
        std::optional<std::string> content = c.text;
        std::vector<std::pair<std::string, std::string>> calls;
        if (parse_tools) {
          ParsedToolCalls pt = parse_tool_calls(c.text);
          content = pt.content;
          for (const auto& t : pt.calls) calls.emplace_back(t.name, t.arguments);
        }
        rc.answer_key = tok::assistant_key(content.value_or(""), calls);
      }
      scope.rec->history->add(rc);
      if (scope.rec->on_record) scope.rec->on_record(rc);
    }
  }
}

void Server::Impl::handle_chat(const http::Request& req, http::Response& res) {
  const double t0 = wall_seconds();
  const Scope scope = scope_of(req);
  auto r = std::make_shared<ChatRequest>(parse_chat_request(req.body, scope.defaults()));
  scope.seed(r->sampling);
  check_model(r->model);
  auto cp = std::make_shared<ChatPrompt>(chat_prompt(*r, scope));
  auto prompt = std::shared_ptr<std::vector<int32_t>>(cp, &cp->ids);
  fit_to_context(*r, static_cast<int64_t>(prompt->size()), engine->max_model_len(), "messages");
  add_stop_ids(r->sampling);
  attach_grammar(*r);
  const ResponseMeta meta{random_id("chatcmpl-"), unix_now(), opts.model_name};
  const TokenDescriber desc = describer();
  if (!r->stream) {
    auto hs = submit_all({*prompt}, r->sampling, nullptr);
    const auto results = wait_all(hs, scope.key);
    record(scope, meta.id, "chat", {*prompt}, results, t0, cp.get(), r->parse_tool_calls);
    std::vector<ChatChoice> choices;
    for (const auto& c : results[0].completions) {
      ChatChoice ch;
      ch.completion = &c;
      ch.finish_reason = c.finish_reason;
      if (r->parse_tool_calls) {
        ParsedToolCalls p = parse_tool_calls(c.text);
        ch.content = p.content;
        ch.tool_calls = std::move(p.calls);
        if (!ch.tool_calls.empty() && c.finish_reason == "stop") ch.finish_reason = "tool_calls";
      } else {
        ch.content = c.text;
      }
      choices.push_back(std::move(ch));
    }
    res.prompt_tokens = static_cast<int64_t>(prompt->size());
    res.completion_tokens = 0;
    for (const auto& c : results[0].completions) res.completion_tokens += static_cast<int64_t>(c.token_ids.size());
    send_json(res, 200, chat_response(meta, *r, *prompt, choices, desc));
    return;
  }
  res.prompt_tokens = static_cast<int64_t>(prompt->size());
  auto queue = std::make_shared<StreamQueue>();
  auto hs = submit_all({*prompt}, r->sampling, queue);
  const int64_t n = r->sampling.n;
  struct ChoiceState {
    ToolCallStreamFilter filter;
    std::string text;
    int64_t tokens = 0;
  };
  auto st = std::make_shared<std::vector<ChoiceState>>(static_cast<size_t>(n));
  auto start = [r, prompt, meta, desc, n](std::vector<std::string>& out) {
    for (int64_t i = 0; i < n; ++i) {
      ChunkDelta d;
      d.index = i;
      d.role = true;
      d.content = "";
      d.prompt_token_ids = i == 0 ? prompt.get() : nullptr;
      out.push_back(chat_chunk(meta, *r, d, desc));
    }
  };
  auto end_choice = [r, meta, desc, st](int64_t choice, const std::string& reason, std::vector<std::string>& out) {
    ChoiceState& s = (*st)[static_cast<size_t>(choice)];
    std::string fr = reason;
    if (r->parse_tool_calls) {
      ParsedToolCalls p = parse_tool_calls(s.text);
      ChunkDelta d;
      d.index = choice;
      if (!p.calls.empty()) {
        d.tool_calls = std::move(p.calls);
        if (fr == "stop") fr = "tool_calls";
      } else if (!s.filter.held().empty()) {
        d.content = s.filter.held();
      }
      if (d.content || !d.tool_calls.empty()) out.push_back(chat_chunk(meta, *r, d, desc));
    }
    ChunkDelta d;
    d.index = choice;
    d.finish_reason = fr;
    out.push_back(chat_chunk(meta, *r, d, desc));
  };
  auto on_event = [r, meta, desc, st, end_choice](int64_t choice, const engine::StreamEvent& e,
                                                  std::vector<std::string>& out) {
    ChoiceState& s = (*st)[static_cast<size_t>(choice)];
    s.text += e.text_delta;
    std::string content = r->parse_tool_calls ? s.filter.push(e.text_delta) : e.text_delta;
    if (e.token >= 0 || !content.empty()) {
      ChunkDelta d;
      d.index = choice;
      d.content = content;
      if (e.token >= 0) {
        d.token_ids = {e.token};
        d.logprobs = {e.logprob};
        if (r->sampling.top_logprobs > 0) d.top_logprobs = {e.top};
        ++s.tokens;
      }
      out.push_back(chat_chunk(meta, *r, d, desc));
    }
    if (e.finished) end_choice(choice, e.finish_reason, out);
  };
  auto finish = [this, r, meta, prompt, scope, cp, t0](const std::vector<engine::GenerateResult>& results,
                                                       std::vector<std::string>& out) {
    record(scope, meta.id, "chat", {*prompt}, results, t0, cp.get(), r->parse_tool_calls);
    if (!r->include_usage) return;
    int64_t toks = 0;
    for (const auto& gr : results)
      for (const auto& c : gr.completions) toks += static_cast<int64_t>(c.token_ids.size());
    out.push_back(usage_chunk(meta, "chat.completion.chunk", static_cast<int64_t>(prompt->size()), toks));
  };
  stream(res, std::move(hs), queue, start, on_event, end_choice, finish, n, nullptr, true, scope.key);
}

void Server::Impl::handle_completions(const http::Request& req, http::Response& res) {
  const double t0 = wall_seconds();
  const Scope scope = scope_of(req);
  auto r = std::make_shared<CompletionRequest>(parse_completion_request(req.body, scope.defaults()));
  scope.seed(r->sampling);
  check_model(r->model);
  auto prompts = std::make_shared<std::vector<std::vector<int32_t>>>();
  for (const auto& t : r->text_prompts) {
    try {
      prompts->push_back(tok->encode(t, true));
    } catch (const Error& e) {
      throw ApiError(400, strcat("cannot tokenize the prompt: ", e.what()), "prompt");
    }
    if (prompts->back().empty()) throw ApiError(400, "the prompt encodes to no tokens", "prompt");
  }
  for (size_t i = 0; i < r->token_prompts.size(); ++i) {
    check_ids(r->token_prompts[i], r->token_prompts.size() == 1 ? "prompt" : strcat("prompt[", i, "]"));
    prompts->push_back(r->token_prompts[i]);
  }
  // One max_tokens for all prompts: it must fit the longest one.
  size_t longest = 0;
  for (const auto& p : *prompts) longest = std::max(longest, p.size());
  fit_to_context(*r, static_cast<int64_t>(longest), engine->max_model_len(), "prompt");
  add_stop_ids(r->sampling);
  attach_grammar(*r);
  const ResponseMeta meta{random_id("cmpl-"), unix_now(), opts.model_name};
  const TokenDescriber desc = describer();
  if (!r->stream) {
    auto hs = submit_all(*prompts, r->sampling, nullptr);
    const auto results = wait_all(hs, scope.key);
    record(scope, meta.id, "completions", *prompts, results, t0);
    std::vector<const engine::Completion*> comps;
    res.prompt_tokens = res.completion_tokens = 0;
    for (const auto& p : *prompts) res.prompt_tokens += static_cast<int64_t>(p.size());
    for (const auto& gr : results)
      for (const auto& c : gr.completions) {
        comps.push_back(&c);
        res.completion_tokens += static_cast<int64_t>(c.token_ids.size());
      }
    send_json(res, 200, completion_response(meta, *r, *prompts, comps, desc));
    return;
  }
  res.prompt_tokens = 0;
  for (const auto& p : *prompts) res.prompt_tokens += static_cast<int64_t>(p.size());
  auto queue = std::make_shared<StreamQueue>();
  auto hs = submit_all(*prompts, r->sampling, queue);
  const int64_t n = r->sampling.n;
  const int64_t n_choices = n * static_cast<int64_t>(prompts->size());
  auto first = std::make_shared<std::vector<bool>>(static_cast<size_t>(n_choices), true);
  auto start = [](std::vector<std::string>&) {};
  auto end_choice = [r, meta, desc](int64_t choice, const std::string& reason, std::vector<std::string>& out) {
    ChunkDelta d;
    d.index = choice;
    d.finish_reason = reason;
    out.push_back(completion_chunk(meta, *r, d, desc));
  };
  auto on_event = [r, meta, desc, prompts, first, n, end_choice](int64_t choice, const engine::StreamEvent& e,
                                                                 std::vector<std::string>& out) {
    if (e.token >= 0 || !e.text_delta.empty()) {
      ChunkDelta d;
      d.index = choice;
      d.content = e.text_delta;
      if (e.token >= 0) {
        d.token_ids = {e.token};
        d.logprobs = {e.logprob};
        if (r->sampling.top_logprobs > 0) d.top_logprobs = {e.top};
      }
      if ((*first)[static_cast<size_t>(choice)]) {
        d.prompt_token_ids = &(*prompts)[static_cast<size_t>(choice / n)];
        (*first)[static_cast<size_t>(choice)] = false;
      }
      out.push_back(completion_chunk(meta, *r, d, desc));
    }
    if (e.finished) end_choice(choice, e.finish_reason, out);
  };
  auto finish = [this, r, meta, prompts, scope, t0](const std::vector<engine::GenerateResult>& results,
                                                    std::vector<std::string>& out) {
    record(scope, meta.id, "completions", *prompts, results, t0);
    if (!r->include_usage) return;
    int64_t ptoks = 0, toks = 0;
    for (const auto& p : *prompts) ptoks += static_cast<int64_t>(p.size());
    for (const auto& gr : results)
      for (const auto& c : gr.completions) toks += static_cast<int64_t>(c.token_ids.size());
    out.push_back(usage_chunk(meta, "text_completion", ptoks, toks));
  };
  stream(res, std::move(hs), queue, start, on_event, end_choice, finish, n_choices, nullptr, true, scope.key);
}

// Routing: CORS headers, OPTIONS preflight, API-key check (/v1/ only), 404 / 405, then the route.
void Server::Impl::dispatch(const http::Request& req, http::Response& res) {
  const bool cors = !opts.allow_origin.empty();
  if (cors) {
    res.set_header("Access-Control-Allow-Origin", opts.allow_origin);
    if (opts.allow_origin != "*") res.set_header("Vary", "Origin");
  }
  std::string allow;
  const Route* r = find_route(req.method, req.path, &allow);
  if (req.method == "OPTIONS" && (r || !allow.empty())) {
    res.status = 204;
    res.set_header("Allow", allow.empty() ? "OPTIONS" : allow + ", OPTIONS");
    if (cors) {
      res.set_header("Access-Control-Allow-Methods", allow.empty() ? "OPTIONS" : allow + ", OPTIONS");
      const std::string want = req.header("Access-Control-Request-Headers");
      res.set_header("Access-Control-Allow-Headers", want.empty() ? "Authorization, Content-Type" : want);
      res.set_header("Access-Control-Max-Age", "600");
    }
    return;
  }
  const bool keyed = req.path.rfind("/v1/", 0) == 0 || (r && r->needs_key);
  if (opts.recording_for_key && keyed) {
    try {
      (void)scope_of(req);
    } catch (const ApiError& e) {
      send_error(res, e);
      return;
    }
  } else if (!opts.api_key.empty() && keyed) {
    const std::string want = "Bearer " + opts.api_key;
    const std::string got = req.header("Authorization");
    // Constant-time comparison.
    unsigned diff = static_cast<unsigned>(got.size() ^ want.size());
    for (size_t i = 0; i < want.size(); ++i)
      diff |= static_cast<unsigned char>(want[i] ^ (i < got.size() ? got[i] : 0));
    if (diff != 0) {
      send_error(res, ApiError(401,
                               got.empty() ? "Missing API key: send 'Authorization: Bearer <key>'"
                                           : "Incorrect API key provided",
                               "", "invalid_api_key"));
      return;
    }
  }
  if (!r && allow.empty()) {
    send_error(res, ApiError(404, strcat("no route for ", req.method, " ", req.path.substr(0, 200))));
    return;
  }
  if (!r) {
    res.set_header("Allow", allow);
    send_error(
        res, ApiError(405, strcat("method ", req.method, " is not allowed on ", req.path, " (allowed: ", allow, ")")));
    return;
  }
  ++n_requests;
  try {
    r->fn(req, res);
  } catch (const ApiError& e) {
    ++n_errors;
    send_error(res, e);
  } catch (const ValueError& e) {
    ++n_errors;
    send_error(res, ApiError(400, e.what(), param_of(e.what())));
  } catch (const std::exception& e) {
    ++n_errors;
    log::error("serve: ", req.method, " ", req.path, " failed: ", e.what());
    send_error(res, ApiError(500, strcat("internal error: ", e.what()), "", "", "server_error"));
  }
}

// After each response: metrics and the access log line (no prompt text).
void Server::Impl::completed(const http::Request& req, const http::Response& res) {
  using secs = std::chrono::duration<double>;
  const auto now = std::chrono::steady_clock::now();
  const double total = secs(now - req.started).count();
  const double queued = req.handled > req.dispatched ? secs(req.handled - req.dispatched).count() : 0.0;
  const std::string route = route_label(req.path);
  {
    std::lock_guard<std::mutex> l(metrics_mu);
    ++by_route[{route, req.method.size() <= 8 ? req.method : "other", res.status}];
    queue_seconds += queued;
    duration_seconds += total;
    ++timed;
  }
  if (!opts.access_log || log::level() > log::Level::kInfo) return;
  std::string line =
      strcat("http: ", req.remote, " ", req.method.substr(0, 16), " ", req.path.substr(0, 200), " ", res.status);
  if (res.prompt_tokens >= 0) line += strcat(" prompt_tokens=", res.prompt_tokens);
  if (res.completion_tokens >= 0) line += strcat(" completion_tokens=", res.completion_tokens);
  char ms[64];
  std::snprintf(ms, sizeof(ms), " %.2f ms (queue %.2f ms)%s", total * 1e3, queued * 1e3,
                res.write_failed ? " client gone" : "");
  line += ms;
  for (auto& c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  log::info(line);
}

// Prometheus text exposition format (version 0.0.4).
std::string Server::Impl::metrics_text() {
  const engine::EngineStats s = engine->stats();
  std::string o;
  auto metric = [&o](const char* name, const char* type, const char* help, const std::string& value) {
    o += strcat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ", value, "\n");
  };
  o += "# HELP trinity_http_requests_total HTTP responses by route, method and status.\n"
       "# TYPE trinity_http_requests_total counter\n";
  double qs = 0, ds = 0;
  int64_t n = 0, errors = 0;
  {
    std::lock_guard<std::mutex> l(metrics_mu);
    for (const auto& [k, v] : by_route) {
      const auto& [route, method, status] = k;
      o += strcat("trinity_http_requests_total{route=\"", route, "\",method=\"", method, "\",status=\"", status, "\"} ",
                  v, "\n");
      if (status >= 400) errors += v;
    }
    qs = queue_seconds;
    ds = duration_seconds;
    n = timed;
  }
  size_t inflight_n = 0;
  {
    std::lock_guard<std::mutex> l(inflight_mu);
    inflight_n = inflight.size();
  }
  metric("trinity_http_errors_total", "counter", "HTTP responses with status >= 400.", strcat(errors));
  metric("trinity_http_streams_cancelled_total", "counter", "Streams ended early (client gone or shutdown).",
         strcat(n_cancelled.load()));
  o += strcat(
      "# HELP trinity_http_request_duration_seconds Time from the first request byte to the end of the response.\n"
      "# TYPE trinity_http_request_duration_seconds summary\n"
      "trinity_http_request_duration_seconds_sum ",
      ds, "\ntrinity_http_request_duration_seconds_count ", n, "\n");
  o += strcat(
      "# HELP trinity_http_queue_seconds Time complete requests waited for an HTTP worker.\n"
      "# TYPE trinity_http_queue_seconds summary\n"
      "trinity_http_queue_seconds_sum ",
      qs, "\ntrinity_http_queue_seconds_count ", n, "\n");
  metric("trinity_http_requests_queued", "gauge", "Complete requests waiting for an HTTP worker.",
         strcat(http ? http->queued() : 0));
  metric("trinity_engine_requests_inflight", "gauge", "Engine requests submitted by HTTP handlers, not finished.",
         strcat(inflight_n));
  o += "# HELP trinity_engine_queue_seconds Time requests waited from submission to admission by the engine "
       "scheduler (KV pages reserved).\n# TYPE trinity_engine_queue_seconds histogram\n";
  for (size_t b = 0; b < engine::EngineStats::kQueueBuckets.size(); ++b)
    o += strcat("trinity_engine_queue_seconds_bucket{le=\"", engine::EngineStats::kQueueBuckets[b], "\"} ",
                s.queue_le[b], "\n");
  o += strcat("trinity_engine_queue_seconds_bucket{le=\"+Inf\"} ", s.queue_count, "\ntrinity_engine_queue_seconds_sum ",
              s.queue_seconds_sum, "\ntrinity_engine_queue_seconds_count ", s.queue_count, "\n");
  metric("trinity_engine_running", "gauge", "Requests in the running batch.", strcat(s.running));
  metric("trinity_engine_waiting", "gauge", "Requests waiting for admission.", strcat(s.waiting));
  metric("trinity_engine_steps_total", "counter", "Engine scheduler steps.", strcat(s.steps));
  metric("trinity_engine_finished_total", "counter", "Engine requests finished.", strcat(s.finished));
  metric("trinity_prompt_tokens_total", "counter", "Prompt tokens prefilled.", strcat(s.prompt_tokens));
  metric("trinity_generation_tokens_total", "counter", "Tokens generated.", strcat(s.generated_tokens));
  metric("trinity_kv_pages_total", "gauge", "KV cache pages.", strcat(s.kv_pages_total));
  metric("trinity_kv_pages_used", "gauge", "KV cache pages in use (cached pages no request uses count as free).",
         strcat(s.kv_pages_total - s.kv_pages_free));
  metric("trinity_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         strcat(s.prefix_cache_query_tokens));
  metric("trinity_prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache (prefill skipped).",
         strcat(s.prefix_cache_hit_tokens));
  metric("trinity_prefix_cache_pages", "gauge", "KV pages held by the prefix cache.", strcat(s.prefix_cache_pages));
  metric("trinity_prefix_cache_evictions_total", "counter", "Prefix-cache pages evicted to make room.",
         strcat(s.prefix_cache_evictions));
  metric("trinity_model_version", "gauge", "Weight version being served.", strcat(s.model_version));
  return o;
}

Server::Server(std::shared_ptr<engine::Engine> engine, std::shared_ptr<const tok::Tokenizer> tokenizer,
               std::shared_ptr<const tok::ChatFormatter> chat, std::vector<int32_t> stop_ids, ServerOptions opts)
    : impl_(std::make_unique<Impl>()) {
  auto& im = *impl_;
  im.engine = std::move(engine);
  im.tok = std::move(tokenizer);
  im.chat = std::move(chat);
  im.stop_ids = std::move(stop_ids);
  im.opts = std::move(opts);
  Impl* p = &im;

  http::Options ho;
  ho.host = im.opts.host;
  ho.port = im.opts.port;
  ho.workers = std::max(4, im.opts.threads);
  ho.max_body_bytes = im.opts.max_body_bytes;
  ho.header_timeout = std::chrono::milliseconds(im.opts.header_timeout_ms);
  ho.body_timeout = std::chrono::milliseconds(im.opts.body_timeout_ms);
  ho.idle_timeout = std::chrono::milliseconds(im.opts.idle_timeout_ms);
  ho.handler = [p](const http::Request& req, http::Response& res) { p->dispatch(req, res); };
  ho.is_fast = [](const http::Request& req) {
    return req.method == "OPTIONS" || (req.method == "GET" && (req.path == "/health" || req.path == "/metrics" ||
                                                               req.path.rfind("/v1/models", 0) == 0));
  };
  ho.error_body = [](int status, const std::string& msg) {
    const char* code = status == 413 ? "request_too_large" : status == 408 ? "request_timeout" : "";
    return error_body(ApiError(status, msg, "", code, status >= 500 ? "server_error" : "invalid_request_error"));
  };
  ho.on_complete = [p](const http::Request& req, const http::Response& res) { p->completed(req, res); };
  im.http = std::make_unique<http::Server>(std::move(ho));

  for (const ExtraRoute& x : im.opts.routes) {
    auto h = x.handler;
    auto fn = [h](const http::Request& q, http::Response& r) {
      std::pair<int, std::string> out;
      try {
        out = h(q.body, q.header("Accept"));
      } catch (const std::invalid_argument& e) {
        throw ApiError(400, e.what());
      }
      const bool is_json = !out.second.empty() && (out.second[0] == '{' || out.second[0] == '[');
      r.status = out.first;
      r.set_content(out.second, is_json ? "application/json" : "text/plain; version=0.0.4; charset=utf-8");
    };
    im.routes.push_back({x.method, x.path, std::move(fn), x.needs_key});
  }
  auto get = [&im](std::string path, std::function<void(const http::Request&, http::Response&)> fn) {
    im.routes.push_back({"GET", std::move(path), std::move(fn)});
  };
  auto post = [&im](std::string path, void (Impl::*fn)(const http::Request&, http::Response&)) {
    Impl* self = &im;
    im.routes.push_back(
        {"POST", std::move(path), [self, fn](const http::Request& q, http::Response& r) { (self->*fn)(q, r); }});
  };
  get("/health", [p](const http::Request&, http::Response& res) {
    const engine::EngineStats s = p->engine->stats();
    size_t inflight = 0;
    {
      std::lock_guard<std::mutex> l(p->inflight_mu);
      inflight = p->inflight.size();
    }
    const nlohmann::json j = {{"status", p->stopping ? "stopping" : "ok"},
                              {"model", p->opts.model_name},
                              {"model_version", s.model_version},
                              {"running", s.running},
                              {"waiting", s.waiting},
                              {"steps", s.steps},
                              {"finished", s.finished},
                              {"prompt_tokens", s.prompt_tokens},
                              {"generated_tokens", s.generated_tokens},
                              {"kv_pages_total", s.kv_pages_total},
                              {"kv_pages_free", s.kv_pages_free},
                              {"prefix_cache_hit_tokens", s.prefix_cache_hit_tokens},
                              {"prefix_cache_pages", s.prefix_cache_pages},
                              {"inflight_requests", inflight},
                              {"http_requests", p->n_requests.load()},
                              {"http_errors", p->n_errors.load()},
                              {"streams_cancelled", p->n_cancelled.load()}};
    send_json(res, p->stopping ? 503 : 200, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  });
  get("/metrics", [p](const http::Request&, http::Response& res) {
    res.set_content(p->metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  auto model_json = [p]() {
    return nlohmann::json{{"id", p->opts.model_name},
                          {"object", "model"},
                          {"created", p->created},
                          {"owned_by", "trinity"},
                          {"max_model_len", p->engine->max_model_len()},
                          {"model_version", p->engine->model_version()}};
  };
  get("/v1/models", [model_json](const http::Request&, http::Response& res) {
    const nlohmann::json j = {{"object", "list"}, {"data", nlohmann::json::array({model_json()})}};
    send_json(res, 200, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  });
  get("/v1/models/", [p, model_json](const http::Request& req, http::Response& res) {
    const std::string id = req.path.substr(std::strlen("/v1/models/"));
    if (id != p->opts.model_name) {
      send_error(res, ApiError(404, strcat("The model '", id, "' does not exist"), "model", "model_not_found"));
      return;
    }
    send_json(res, 200, model_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  });
  post("/v1/chat/completions", &Impl::handle_chat);
  post("/v1/completions", &Impl::handle_completions);
  post("/v1/responses", &Impl::handle_responses);
}

Server::~Server() {
  stop();
  impl_->http.reset();
}

int Server::bind() {
  return impl_->http->bind();
}

void Server::run() {
  if (!impl_->stopping) impl_->http->run();
}

void Server::stop() {
  auto& im = *impl_;
  im.stopping = true;
  {
    std::lock_guard<std::mutex> l(im.inflight_mu);
    for (auto& [k, f] : im.inflight) f.handle.cancel();
  }
  if (im.http) im.http->stop();
}

std::string Server::metrics_text() {
  return impl_->metrics_text();
}

void Server::cancel_key(const std::string& key) {
  auto& im = *impl_;
  std::lock_guard<std::mutex> l(im.inflight_mu);
  for (auto& [k, f] : im.inflight)
    if (f.api_key == key) f.handle.cancel();
}

}  // namespace trinity::server
