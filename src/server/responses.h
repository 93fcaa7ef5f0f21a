// The OpenAI Responses API (POST /v1/responses) on top of the chat pipeline: a request becomes a
// ChatRequest (instructions + input items -> chat messages, function_call / function_call_output items
// -> assistant tool_calls / tool messages, text.format -> response_format, max_output_tokens ->
// max_tokens), so prompts, tools and constrained decoding are exactly chat completions'. The output
// is shaped as Responses output items (a message with output_text and/or function_call items), as a
// response object or as the typed SSE events (response.created ... response.completed, each with a
// sequence_number). Errors name the Responses field ("input[2].content", "text.format.schema").
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/protocol.h"

namespace trinity::server {

// Output items of earlier responses by id (JSON text), so later requests may send
// {"type": "item_reference", "id": ...} (the AI SDK does by default). Bounded: the oldest items are
// dropped past `max_items` or `max_bytes`; a dropped or unknown id is a 400 naming the input item.
class ResponseItemStore {
 public:
  explicit ResponseItemStore(size_t max_items = 8192, size_t max_bytes = size_t{32} << 20)
      : max_items_(max_items), max_bytes_(max_bytes) {}
  void put(const std::string& id, std::string item_json);
  std::optional<std::string> get(const std::string& id) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> items_;
  std::deque<std::string> order_;
  size_t bytes_ = 0, max_items_, max_bytes_;
};

struct ResponsesRequest {
  ChatRequest chat;   // the request as a chat completion (n = 1)
  std::string echo;   // JSON object: the request fields a response object echoes (tools, text, ...)
  bool store = true;  // remember the output items for item_reference
};

// Resolves an item_reference id to the item's JSON text (nullopt: unknown).
using ItemLookup = std::function<std::optional<std::string>(const std::string& id)>;

// Throws ApiError(400) naming the Responses field; unknown top-level fields are refused, as OpenAI does.
ResponsesRequest parse_responses_request(std::string_view body, const ItemLookup& lookup);

// Request field names the chat pipeline uses -> the Responses ones ("max_tokens" -> "max_output_tokens",
// "messages" -> "input"), for errors raised after parsing.
std::string responses_param(const std::string& chat_param);

// Builds the response object (non-streaming) or the SSE events (streaming) of one response. Not
// thread-safe: one stream's events come from one thread.
class ResponsesWriter {
 public:
  ResponsesWriter(ResponseMeta meta, std::shared_ptr<const ResponsesRequest> req, TokenDescriber describe,
                  int64_t prompt_tokens);
  ~ResponsesWriter();
  ResponsesWriter(const ResponsesWriter&) = delete;
  ResponsesWriter& operator=(const ResponsesWriter&) = delete;

  // Non-streaming: the response object of a finished generation.
  std::string response(const engine::Completion& c);

  // Streaming; each string is one SSE event, "event: TYPE\ndata: {...}".
  void start(std::vector<std::string>& out);  // response.created, response.in_progress
  void on_event(const engine::StreamEvent& e, std::vector<std::string>& out);
  // Closes the message, sends the function calls, then response.completed / response.incomplete.
  void finish(const engine::Completion& c, std::vector<std::string>& out);
  // A failure after the stream started: an `error` event, then response.failed.
  void fail(const ApiError& e, std::vector<std::string>& out);
  bool failed() const;

  // (id, JSON) of the output items of the finished response, for ResponseItemStore.
  const std::vector<std::pair<std::string, std::string>>& items() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace trinity::server
