// Responses API unit tests: request -> chat request mapping (input items, instructions, function
// calls and outputs, tools, tool_choice, text.format, logprobs), errors naming the Responses field,
// item_reference through the bounded item store, and the response object / stream events shaping
// (message and function_call items, statuses, usage, sequence numbers, the final snapshot equal to
// the streamed deltas).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/responses.h"

using namespace trinity;
using namespace trinity::server;
using json = nlohmann::json;

namespace {

const ItemLookup kNoItems = [](const std::string&) { return std::optional<std::string>(); };

ResponsesRequest parse(const std::string& body, const ItemLookup& lookup = kNoItems) {
  return parse_responses_request(body, lookup);
}

void expect_error(const std::string& body, const std::string& param, const std::string& code = "") {
  try {
    parse(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << e.what();
    EXPECT_EQ(e.param, param) << body << " -> " << e.what();
    if (!code.empty()) {
      EXPECT_EQ(e.code, code);
    }
    EXPECT_NE(std::string(e.what()).size(), 0u);
    return;
  }
  ADD_FAILURE() << "no ApiError for " << body << " (expected param '" << param << "')";
}

json messages_of(const ResponsesRequest& r) {
  return json::parse(r.chat.messages.to_json());
}

TokenText fake_text(const void*, int32_t id) {
  TokenText t;
  t.text = "t";
  t.text += std::to_string(id);
  t.bytes.assign(t.text.begin(), t.text.end());
  return t;
}

// Splits "event: X\ndata: {...}" frames into JSON events (checking the event name is the type).
std::vector<json> events_of(const std::vector<std::string>& frames) {
  std::vector<json> out;
  for (const auto& f : frames) {
    EXPECT_EQ(f.rfind("event: ", 0), 0u) << f;
    const size_t nl = f.find("\ndata: ");
    EXPECT_NE(nl, std::string::npos) << f;
    json e = json::parse(f.substr(nl + 7));
    EXPECT_EQ(e["type"], f.substr(7, nl - 7));
    out.push_back(e);
  }
  return out;
}

engine::StreamEvent token_event(int32_t id, const std::string& text) {
  engine::StreamEvent e;
  e.token = id;
  e.logprob = -0.5f;
  e.text_delta = text;
  return e;
}

engine::Completion completion(const std::string& text, size_t tokens, const std::string& reason) {
  engine::Completion c;
  c.text = text;
  for (size_t i = 0; i < tokens; ++i) {
    c.token_ids.push_back(static_cast<int32_t>(10 + i));
    c.logprobs.push_back(-0.5f);
  }
  c.finish_reason = reason;
  return c;
}

// Runs a stream of `deltas` (one token each) then finish; returns the events.
std::vector<json> stream_events(const std::shared_ptr<ResponsesRequest>& r, const std::vector<std::string>& deltas,
                                const std::string& reason) {
  ResponsesWriter w({"resp_1", 7, "m"}, r, TokenDescriber{nullptr, &fake_text}, 5);
  std::vector<std::string> frames;
  w.start(frames);
  std::string text;
  for (size_t i = 0; i < deltas.size(); ++i) {
    w.on_event(token_event(static_cast<int32_t>(10 + i), deltas[i]), frames);
    text += deltas[i];
  }
  w.finish(completion(text, deltas.size(), reason), frames);
  return events_of(frames);
}

}  // namespace

TEST(Responses, StringInputAndInstructions) {
  ResponsesRequest r = parse(R"({"model": "m", "input": "hi", "instructions": "be brief", "max_output_tokens": 9,
                                 "temperature": 0.5, "top_p": 0.9, "store": false, "metadata": {"k": "v"},
                                 "user": "u", "parallel_tool_calls": false, "stream": true})");
  EXPECT_EQ(r.chat.model, "m");
  EXPECT_EQ(r.chat.sampling.max_tokens, 9);
  EXPECT_TRUE(r.chat.max_tokens_set);
  EXPECT_DOUBLE_EQ(r.chat.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.chat.sampling.top_p, 0.9);
  EXPECT_TRUE(r.chat.stream);
  EXPECT_FALSE(r.store);
  EXPECT_EQ(messages_of(r), json::parse(R"([{"role": "system", "content": "be brief"},
                                            {"role": "user", "content": "hi"}])"));
  const json echo = json::parse(r.echo);
  EXPECT_EQ(echo["instructions"], "be brief");
  EXPECT_EQ(echo["metadata"], json::parse(R"({"k": "v"})"));
  EXPECT_EQ(echo["max_output_tokens"], 9);
  EXPECT_EQ(echo["text"], json::parse(R"({"format": {"type": "text"}})"));
  EXPECT_EQ(echo["tool_choice"], "auto");
  EXPECT_EQ(echo["parallel_tool_calls"], false);
}

TEST(Responses, InputItemsBecomeChatMessages) {
  // What the clients send: typed messages with content parts, LangChain's echoed output items (ids,
  // status, annotations), a function call (merged into the assistant message) and its output.
  ResponsesRequest r = parse(R"({"input": [
      {"role": "developer", "content": "sys"},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather "},
                                                      {"type": "input_text", "text": "in Paris?"}]},
      {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "Let me check.", "annotations": [], "logprobs": []}]},
      {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
       "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
      {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
      {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "noon"}]}]})");
  const json m = messages_of(r);
  ASSERT_EQ(m.size(), 6u) << m.dump();
  EXPECT_EQ(m[0], json::parse(R"({"role": "system", "content": "sys"})"));
  EXPECT_EQ(m[1], json::parse(R"({"role": "user", "content": "Weather in Paris?"})"));
  EXPECT_EQ(m[2]["role"], "assistant");
  EXPECT_EQ(m[2]["content"], "Let me check.");
  ASSERT_EQ(m[2]["tool_calls"].size(), 1u);
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], json::parse(R"({"city": "Paris"})"));  // a mapping
  EXPECT_EQ(m[3], json::parse(R"({"role": "tool", "tool_call_id": "call_1", "content": "sunny"})"));
  EXPECT_EQ(m[4]["role"], "assistant");  // a call with no assistant text before it
  EXPECT_EQ(m[4]["content"], "");
  EXPECT_EQ(m[4]["tool_calls"][0]["function"]["name"], "get_time");
  EXPECT_EQ(m[5]["content"], "noon");
}

TEST(Responses, ToolsToolChoiceAndTextFormat) {
  const std::string tools = R"("tools": [{"type": "function", "name": "get_weather", "description": "d",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                     "additionalProperties": false}, "strict": true}])";
  ResponsesRequest r = parse(R"({"input": "x", )" + tools + "}");
  EXPECT_TRUE(r.chat.parse_tool_calls);
  EXPECT_FALSE(r.chat.grammar);
  const json t = json::parse(r.chat.tools.to_json());
  EXPECT_EQ(t[0]["function"]["name"], "get_weather");
  EXPECT_EQ(t[0]["function"]["description"], "d");
  EXPECT_EQ(json::parse(r.echo)["tools"][0]["name"], "get_weather");  // echoed in the Responses form
  r = parse(R"({"input": "x", "tool_choice": "required", )" + tools + "}");
  EXPECT_TRUE(r.chat.grammar);  // a forced call: constrained decoding
  r = parse(R"({"input": "x", "tool_choice": {"type": "function", "name": "get_weather"}, )" + tools + "}");
  EXPECT_TRUE(r.chat.grammar);
  r = parse(R"({"input": "x", "tool_choice": "none", )" + tools + "}");
  EXPECT_FALSE(r.chat.parse_tool_calls);
  r = parse(R"({"input": "x", "text": {"format": {"type": "json_object"}}})");
  EXPECT_TRUE(r.chat.grammar);
  r = parse(R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "a", "strict": true,
      "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                 "additionalProperties": false}}, "verbosity": "low"}})");
  EXPECT_TRUE(r.chat.grammar);
  EXPECT_EQ(json::parse(r.echo)["text"]["format"]["name"], "a");
  r = parse(R"({"input": "x", "text": {"format": {"type": "text"}}})");
  EXPECT_FALSE(r.chat.grammar);
  r = parse(R"({"input": "x", "text": {}})");  // LangChain sends text without a format
  EXPECT_FALSE(r.chat.grammar);
  r = parse(R"({"input": "x", "include": ["message.output_text.logprobs"], "top_logprobs": 3})");
  EXPECT_TRUE(r.chat.logprobs);
  EXPECT_EQ(r.chat.sampling.top_logprobs, 3);
}

TEST(Responses, ErrorsNameTheResponsesField) {
  expect_error(R"({})", "input");
  expect_error(R"({"input": 3})", "input");
  expect_error(R"({"input": []})", "input");
  expect_error(R"([1])", "");
  expect_error(R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens");
  expect_error(R"({"input": "x", "temperature": -1})", "temperature");
  expect_error(R"({"input": "x", "frobnicate": 1})", "frobnicate", "unknown_parameter");
  expect_error(R"({"input": "x", "previous_response_id": "resp_1"})", "previous_response_id");
  expect_error(R"({"input": "x", "conversation": "c"})", "conversation");
  expect_error(R"({"input": "x", "background": true})", "background");
  expect_error(R"({"input": "x", "truncation": "auto"})", "truncation");
  expect_error(R"({"input": "x", "reasoning": {"effort": "high"}})", "reasoning.effort");
  expect_error(R"({"input": "x", "include": ["file_search_call.results"]})", "include[0]");
  expect_error(R"({"input": "x", "top_logprobs": 21})", "top_logprobs");
  expect_error(R"({"input": "x", "stream_options": {}})", "stream_options");
  expect_error(R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]})",
               "input[0].content[0].type");
  expect_error(R"({"input": [{"role": "tool", "content": "x"}]})", "input[0].role");
  expect_error(R"({"input": [{"role": "user"}]})", "input[0].content");
  expect_error(R"({"input": ["hi"]})", "input[0]");
  expect_error(R"({"input": [{"type": "reasoning", "summary": []}]})", "input[0].type");
  expect_error(R"({"input": [{"type": "web_search_call", "id": "ws_1"}]})", "input[0].type");
  expect_error(R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{bad"}]})",
               "input[0].arguments");
  expect_error(R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})", "input[0].call_id");
  expect_error(R"({"input": [{"type": "function_call_output", "call_id": "c"}]})", "input[0].output");
  expect_error(R"({"input": [{"type": "item_reference", "id": "msg_gone"}]})", "input[0].id");
  expect_error(R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools[0].type");
  expect_error(R"({"input": "x", "tools": [{"type": "function"}]})", "tools[0].name");
  expect_error(R"({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": []}]})",
               "tools[0].parameters");
  expect_error(R"({"input": "x", "tool_choice": "sometimes"})", "tool_choice");
  expect_error(R"({"input": "x", "tool_choice": {"type": "web_search"}})", "tool_choice.type");
  expect_error(R"({"input": "x", "tool_choice": "required"})", "tool_choice");  // no tools
  expect_error(R"({"input": "x", "text": {"format": {"type": "yaml"}}})", "text.format.type");
  expect_error(R"({"input": "x", "text": {"format": {"type": "json_schema", "schema": {"type": "object"}}}})",
               "text.format.name");
  expect_error(R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "a",
                  "schema": {"type": "string", "pattern": "a+"}}}})",
               "text.format.schema");
  expect_error(R"({"input": "x", "text": {"colour": "red"}})", "text.colour");
  expect_error(R"({"input": "x", "metadata": {"k": 1}})", "metadata.k");
  expect_error(R"({"input": "x", "store": "yes"})", "store");
}

TEST(Responses, ChatParamsAreRenamed) {
  EXPECT_EQ(responses_param("max_tokens"), "max_output_tokens");
  EXPECT_EQ(responses_param("messages"), "input");
  EXPECT_EQ(responses_param("temperature"), "temperature");
}

TEST(Responses, ItemReferenceResolvesStoredItems) {
  ResponseItemStore store(2, 1 << 20);
  store.put("msg_a", R"({"id": "msg_a", "type": "message", "role": "assistant", "status": "completed",
                         "content": [{"type": "output_text", "text": "earlier", "annotations": []}]})");
  store.put("fc_b", R"({"id": "fc_b", "type": "function_call", "call_id": "call_b", "name": "f", "arguments": "{}",
                        "status": "completed"})");
  const ItemLookup lookup = [&](const std::string& id) { return store.get(id); };
  ResponsesRequest r = parse(R"({"input": [{"role": "user", "content": "q"}, {"type": "item_reference", "id": "msg_a"},
      {"type": "item_reference", "id": "fc_b"}, {"type": "function_call_output", "call_id": "call_b", "output": "ok"}]})",
                             lookup);
  const json m = messages_of(r);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1]["content"], "earlier");
  EXPECT_EQ(m[1]["tool_calls"][0]["id"], "call_b");
  // Bounded: a third item evicts the oldest.
  store.put("msg_c", R"({"type": "message", "role": "assistant", "content": "c"})");
  EXPECT_EQ(store.size(), 2u);
  EXPECT_FALSE(store.get("msg_a"));
  EXPECT_TRUE(store.get("msg_c"));
  ResponseItemStore small(100, 10);
  small.put("big", std::string(20, 'x'));
  EXPECT_FALSE(small.get("big"));
}

TEST(Responses, ResponseObjectShape) {
  auto r =
      std::make_shared<ResponsesRequest>(parse(R"({"input": "x", "max_output_tokens": 4, "metadata": {"a": "b"}})"));
  ResponsesWriter w({"resp_1", 7, "m"}, r, TokenDescriber{nullptr, &fake_text}, 5);
  json o = json::parse(w.response(completion("hello", 3, "stop")));
  EXPECT_EQ(o["id"], "resp_1");
  EXPECT_EQ(o["object"], "response");
  EXPECT_EQ(o["created_at"], 7);
  EXPECT_EQ(o["status"], "completed");
  EXPECT_TRUE(o["incomplete_details"].is_null());
  EXPECT_TRUE(o["error"].is_null());
  EXPECT_EQ(o["model"], "m");
  EXPECT_EQ(o["max_output_tokens"], 4);
  EXPECT_EQ(o["metadata"], json::parse(R"({"a": "b"})"));
  ASSERT_EQ(o["output"].size(), 1u);
  const json& msg = o["output"][0];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["status"], "completed");
  EXPECT_EQ(msg["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(msg["content"],
            json::parse(R"([{"type": "output_text", "text": "hello", "annotations": [], "logprobs": []}])"));
  EXPECT_EQ(o["usage"]["input_tokens"], 5);
  EXPECT_EQ(o["usage"]["output_tokens"], 3);
  EXPECT_EQ(o["usage"]["total_tokens"], 8);
  EXPECT_EQ(o["usage"]["input_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(o["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
  ASSERT_EQ(w.items().size(), 1u);
  EXPECT_EQ(json::parse(w.items()[0].second), msg);

  o = json::parse(w.response(completion("hel", 4, "length")));
  EXPECT_EQ(o["status"], "incomplete");
  EXPECT_EQ(o["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(o["output"][0]["status"], "incomplete");

  auto lr = std::make_shared<ResponsesRequest>(parse(R"({"input": "x", "top_logprobs": 2})"));
  ResponsesWriter lw({"resp_2", 7, "m"}, lr, TokenDescriber{nullptr, &fake_text}, 5);
  o = json::parse(lw.response(completion("ab", 2, "stop")));
  const json& lps = o["output"][0]["content"][0]["logprobs"];
  ASSERT_EQ(lps.size(), 2u);
  EXPECT_EQ(lps[0]["token"], "t10");
  EXPECT_DOUBLE_EQ(lps[0]["logprob"].get<double>(), -0.5);
}

TEST(Responses, FunctionCallOutputItems) {
  auto r = std::make_shared<ResponsesRequest>(parse(R"({"input": "x", "tools": [{"type": "function", "name": "f"}]})"));
  ResponsesWriter w({"resp_1", 7, "m"}, r, TokenDescriber{nullptr, &fake_text}, 5);
  json o = json::parse(
      w.response(completion("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>", 9, "stop")));
  EXPECT_EQ(o["status"], "completed");
  ASSERT_EQ(o["output"].size(), 1u);  // no message: only a call
  const json& fc = o["output"][0];
  EXPECT_EQ(fc["type"], "function_call");
  EXPECT_EQ(fc["name"], "f");
  EXPECT_EQ(fc["arguments"], "{\"a\":1}");
  EXPECT_EQ(fc["status"], "completed");
  EXPECT_EQ(fc["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(fc["call_id"].get<std::string>().rfind("call_", 0), 0u);
  o = json::parse(
      w.response(completion("Sure.<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", 9, "stop")));
  ASSERT_EQ(o["output"].size(), 2u);
  EXPECT_EQ(o["output"][0]["content"][0]["text"], "Sure.");
  EXPECT_EQ(o["output"][1]["type"], "function_call");
  EXPECT_EQ(w.items().size(), 2u);
}

TEST(Responses, StreamEventsMatchTheFinalResponse) {
  auto r = std::make_shared<ResponsesRequest>(parse(R"({"input": "x", "stream": true})"));
  const std::vector<json> ev = stream_events(r, {"Hel", "lo", ""}, "stop");
  std::vector<std::string> types;
  for (size_t i = 0; i < ev.size(); ++i) {
    types.push_back(ev[i]["type"].get<std::string>());
    EXPECT_EQ(ev[i]["sequence_number"], i);
  }
  EXPECT_EQ(types,
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
                "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
                "response.content_part.done", "response.output_item.done", "response.completed"}));
  EXPECT_EQ(ev[0]["response"]["status"], "in_progress");
  EXPECT_EQ(ev[0]["response"]["output"], json::array());
  EXPECT_EQ(ev[2]["item"]["content"], json::array());
  EXPECT_EQ(ev[3]["part"]["text"], "");
  EXPECT_EQ(ev[4]["delta"].get<std::string>() + ev[5]["delta"].get<std::string>(), "Hello");
  EXPECT_EQ(ev[6]["text"], "Hello");
  const json& done = ev.back()["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hello");
  EXPECT_EQ(done["output"][0]["id"], ev[2]["item"]["id"]);
  EXPECT_EQ(ev[4]["item_id"], ev[2]["item"]["id"]);
  EXPECT_EQ(done["usage"]["output_tokens"], 3);
  EXPECT_EQ(done["id"], ev[0]["response"]["id"]);

  const std::vector<json> cut = stream_events(r, {"a", "b"}, "length");
  EXPECT_EQ(cut.back()["type"], "response.incomplete");
  EXPECT_EQ(cut.back()["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

TEST(Responses, StreamedToolCallsAreFunctionCallItems) {
  auto r = std::make_shared<ResponsesRequest>(
      parse(R"({"input": "x", "stream": true, "tools": [{"type": "function", "name": "f"}]})"));
  // Leading newline, then the call split across tokens: no message item, no markup as text.
  const std::vector<json> ev = stream_events(
      r, {"\n", "<tool", "_call>\n{\"name\": \"f\", ", "\"arguments\": {\"a\": 1}}\n</tool_call>", ""}, "stop");
  std::vector<std::string> types;
  for (const auto& e : ev) types.push_back(e["type"].get<std::string>());
  EXPECT_EQ(types,
            (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                      "response.function_call_arguments.delta", "response.function_call_arguments.done",
                                      "response.output_item.done", "response.completed"}));
  EXPECT_EQ(ev[2]["item"]["type"], "function_call");
  EXPECT_EQ(ev[2]["item"]["arguments"], "");
  EXPECT_EQ(ev[2]["output_index"], 0);
  EXPECT_EQ(ev[3]["delta"], "{\"a\":1}");
  EXPECT_EQ(ev[4]["arguments"], "{\"a\":1}");
  EXPECT_EQ(ev[5]["item"], ev.back()["response"]["output"][0]);
  EXPECT_EQ(ev.back()["response"]["output"].size(), 1u);

  // Text, then a call: a message at output 0 with only the text, the call at output 1.
  const std::vector<json> both = stream_events(
      r, {"Sure", ".", "<tool_call>", "\n{\"name\": \"f\", \"arguments\": {}}", "\n</tool_call>"}, "stop");
  std::string text;
  for (const auto& e : both)
    if (e["type"] == "response.output_text.delta") text += e["delta"].get<std::string>();
  EXPECT_EQ(text, "Sure.");
  const json& out = both.back()["response"]["output"];
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["content"][0]["text"], "Sure.");
  EXPECT_EQ(out[1]["type"], "function_call");

  // A tool-call-looking text that does not parse stays text (the held-back part is sent at the end).
  const std::vector<json> bad = stream_events(r, {"x", "<tool_call>", "oops"}, "length");
  text.clear();
  for (const auto& e : bad)
    if (e["type"] == "response.output_text.delta") text += e["delta"].get<std::string>();
  EXPECT_EQ(text, "x<tool_call>oops");
  EXPECT_EQ(bad.back()["response"]["output"][0]["content"][0]["text"], "x<tool_call>oops");
}

TEST(Responses, StreamFailureIsAnErrorThenResponseFailed) {
  auto r = std::make_shared<ResponsesRequest>(parse(R"({"input": "x", "stream": true})"));
  ResponsesWriter w({"resp_1", 7, "m"}, r, TokenDescriber{nullptr, &fake_text}, 5);
  std::vector<std::string> frames;
  w.start(frames);
  w.fail(ApiError(500, "logits were NaN", "", "", "server_error"), frames);
  EXPECT_TRUE(w.failed());
  const std::vector<json> ev = events_of(frames);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[2]["type"], "error");
  EXPECT_EQ(ev[2]["message"], "logits were NaN");
  EXPECT_EQ(ev[2]["code"], "server_error");
  EXPECT_EQ(ev[3]["type"], "response.failed");
  EXPECT_EQ(ev[3]["response"]["status"], "failed");
  EXPECT_EQ(ev[3]["response"]["error"]["message"], "logits were NaN");
}
