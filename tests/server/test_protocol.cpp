// Server protocol unit tests: request parsing and validation (every error names its field with
// an OpenAI-shaped body), context fitting, and the response / chunk JSON (token_ids one to one
// with logprobs.content, including the stop token; usage; return_token_ids extension).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/protocol.h"

using namespace trinity;
using namespace trinity::server;
using json = nlohmann::json;

namespace {

// Expects `fn` to throw an ApiError with this status and param.
template <typename F>
ApiError expect_error(F fn, int status, const std::string& param) {
  try {
    fn();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, status) << e.what();
    EXPECT_EQ(e.param, param) << e.what();
    return e;
  }
  ADD_FAILURE() << "no ApiError (expected param '" << param << "')";
  return ApiError(0, "");
}

ApiError chat_error(const std::string& body, const std::string& param) {
  return expect_error([&] { parse_chat_request(body); }, 400, param);
}

ApiError completion_error(const std::string& body, const std::string& param) {
  return expect_error([&] { parse_completion_request(body); }, 400, param);
}

const std::string kMsgs = R"("messages": [{"role": "user", "content": "hi"}])";

std::string chat(const std::string& extra) { return "{" + kMsgs + (extra.empty() ? "" : ", " + extra) + "}"; }

TokenText fake_text(const void*, int32_t id) {
  TokenText t;
  t.text = id == 99 ? "<|im_end|>" : "t" + std::to_string(id);
  t.bytes.assign(t.text.begin(), t.text.end());
  return t;
}

}  // namespace

TEST(ServerProtocol, ChatDefaultsAndFields) {
  ChatRequest r = parse_chat_request(chat(""));
  EXPECT_EQ(r.sampling.temperature, 1.0);
  EXPECT_EQ(r.sampling.n, 1);
  EXPECT_FALSE(r.max_tokens_set);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.return_token_ids);
  ASSERT_TRUE(r.messages.is_array());
  EXPECT_EQ(r.messages.array().size(), 1u);
  EXPECT_TRUE(r.tools.is_undefined());

  r = parse_chat_request(chat(R"("model": "m", "temperature": 0.5, "top_p": 0.9, "top_k": 20, "min_p": 0.1,
      "repetition_penalty": 1.1, "max_tokens": 7, "n": 3, "stop": ["a", "bc"], "stop_token_ids": [5],
      "seed": 42, "logprobs": true, "top_logprobs": 4, "stream": true, "stream_options": {"include_usage": true},
      "return_token_ids": true, "ignore_eos": true, "min_tokens": 2, "presence_penalty": 0, "user": "u",
      "chat_template_kwargs": {"enable_thinking": false, "date_string": "today"})"));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.sampling.temperature, 0.5);
  EXPECT_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.top_k, 20);
  EXPECT_EQ(r.sampling.min_p, 0.1);
  EXPECT_EQ(r.sampling.repetition_penalty, 1.1);
  EXPECT_EQ(r.sampling.max_tokens, 7);
  EXPECT_TRUE(r.max_tokens_set);
  EXPECT_EQ(r.sampling.n, 3);
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(r.sampling.stop_token_ids, (std::vector<int32_t>{5}));
  EXPECT_EQ(*r.sampling.seed, 42u);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 4);
  EXPECT_TRUE(r.stream && r.include_usage && r.return_token_ids && r.sampling.ignore_eos);
  EXPECT_EQ(r.sampling.min_tokens, 2);
  ASSERT_TRUE(r.enable_thinking.has_value());
  EXPECT_FALSE(*r.enable_thinking);
  ASSERT_TRUE(r.template_kwargs.is_object());
  EXPECT_EQ(r.template_kwargs.find("date_string")->as_string(), "today");
}

TEST(ServerProtocol, NullMeansAbsentAndMaxCompletionTokensWins) {
  ChatRequest r = parse_chat_request(chat(R"("temperature": null, "max_tokens": 5, "max_completion_tokens": 9,
                                              "stop": null, "seed": null)"));
  EXPECT_EQ(r.sampling.temperature, 1.0);
  EXPECT_EQ(r.sampling.max_tokens, 9);
  EXPECT_TRUE(r.sampling.stop.empty());
  EXPECT_FALSE(r.sampling.seed.has_value());
  r = parse_chat_request(chat(R"("max_tokens": 16.0, "stop": "x")"));
  EXPECT_EQ(r.sampling.max_tokens, 16);
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"x"});
}

TEST(ServerProtocol, MalformedBodies) {
  ApiError e = chat_error(R"({"messages": [)", "");
  EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  chat_error("[1, 2]", "");
  chat_error("", "");
  chat_error(std::string(200, '[') + std::string(200, ']'), "");  // nesting bomb refused before parsing
  chat_error("{}", "messages");
  chat_error(R"({"messages": "hi"})", "messages");
  chat_error(R"({"messages": []})", "messages");
}

TEST(ServerProtocol, WrongTypesNameTheField) {
  chat_error(chat(R"("temperature": "hot")"), "temperature");
  chat_error(chat(R"("max_tokens": "10")"), "max_tokens");
  chat_error(chat(R"("max_tokens": 10.5)"), "max_tokens");
  chat_error(chat(R"("n": true)"), "n");
  chat_error(chat(R"("stream": "yes")"), "stream");
  chat_error(chat(R"("logprobs": 1)"), "logprobs");
  chat_error(chat(R"("stop": 5)"), "stop");
  chat_error(chat(R"("stop": ["a", 1])"), "stop[1]");
  chat_error(chat(R"("stop_token_ids": [1, -2])"), "stop_token_ids[1]");
  chat_error(chat(R"("seed": "s")"), "seed");
  chat_error(chat(R"("model": 3)"), "model");
  chat_error(chat(R"("return_token_ids": 1)"), "return_token_ids");
  chat_error(chat(R"("chat_template_kwargs": {"enable_thinking": "no"})"), "chat_template_kwargs.enable_thinking");
  chat_error(R"({"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]})", "messages[1].role");
  chat_error(R"({"messages": [{"content": "b"}]})", "messages[0].role");
  chat_error(R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content");
  chat_error(R"({"messages": [{"role": "user"}]})", "messages[0].content");
  chat_error(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
             "messages[0].content[0].type");
  chat_error(R"({"messages": [3]})", "messages[0]");
}

TEST(ServerProtocol, OutOfRangeValues) {
  chat_error(chat(R"("temperature": -0.1)"), "temperature");
  chat_error(chat(R"("max_tokens": -1)"), "max_tokens");
  chat_error(chat(R"("max_tokens": 0)"), "max_tokens");
  chat_error(chat(R"("max_completion_tokens": -5)"), "max_completion_tokens");
  chat_error(chat(R"("top_p": 0)"), "top_p");
  chat_error(chat(R"("top_p": 1.5)"), "top_p");
  chat_error(chat(R"("top_k": -2)"), "top_k");
  chat_error(chat(R"("min_p": 2)"), "min_p");
  chat_error(chat(R"("repetition_penalty": 0)"), "repetition_penalty");
  chat_error(chat(R"("n": 0)"), "n");
  chat_error(chat(R"("n": 1000)"), "n");
  chat_error(chat(R"("logprobs": true, "top_logprobs": 21)"), "top_logprobs");
  chat_error(chat(R"("top_logprobs": 2)"), "top_logprobs");  // needs logprobs: true
  chat_error(chat(R"("stop": [""])"), "stop");
  chat_error(chat(R"("min_tokens": 9, "max_tokens": 3)"), "min_tokens");
  chat_error(chat(R"("stream_options": {"include_usage": true})"), "stream_options");  // without stream
}

// A number that overflows a double (1e400) was a json out_of_range escaping as 500: now 400 naming
// the field. A tool-call arguments string is JSON inside JSON: its nesting is checked with the
// body's limit before it is parsed (it was parsed and re-dumped recursively, unchecked).
TEST(ServerProtocol, OverflowingNumbersAndDeepArgumentStrings) {
  chat_error(chat(R"("temperature": 1e400)"), "temperature");
  chat_error(chat(R"("top_p": -1e999)"), "top_p");
  completion_error(R"({"prompt": "x", "max_tokens": 1e400})", "max_tokens");
  auto call_with = [](const std::string& args) {
    json m = {{"role", "assistant"},
              {"tool_calls",
               json::array({{{"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", args}}}}})}};
    return json{{"messages", json::array({m})}}.dump();
  };
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  ApiError e = chat_error(call_with("{\"a\": " + deep + "}"), "messages[0].tool_calls[0].function.arguments");
  EXPECT_NE(std::string(e.what()).find("deeper"), std::string::npos) << e.what();
  const std::string ok64 = std::string(63, '[') + std::string(63, ']');
  EXPECT_NO_THROW(parse_chat_request(call_with("{\"a\": " + ok64 + "}"))) << "64 levels are allowed";
  chat_error(call_with("{\"a\": 1e400}"), "messages[0].tool_calls[0].function.arguments");
}

TEST(ServerProtocol, UnsupportedFeaturesAreRefusedNotIgnored) {
  chat_error(chat(R"("presence_penalty": 0.5)"), "presence_penalty");
  chat_error(chat(R"("frequency_penalty": 1)"), "frequency_penalty");
  chat_error(chat(R"("logit_bias": {"5": 10})"), "logit_bias");
  chat_error(chat(R"("response_format": {"type": "xml"})"), "response_format.type");
  chat_error(chat(R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}})"),
             "response_format.json_schema.name");
  chat_error(chat(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true,
             "schema": {"type": "string", "pattern": "a+"}}})"),
             "response_format.json_schema.schema");
  chat_error(chat(R"("response_format": {"type": "json_object"}, "ignore_eos": true)"), "ignore_eos");
  EXPECT_NE(parse_chat_request(chat(R"("response_format": {"type": "json_object"})")).grammar, nullptr);
  EXPECT_NE(parse_chat_request(chat(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x",
             "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}})"))
                .grammar,
            nullptr);
  chat_error(chat(R"("tool_choice": "required")"), "tool_choice");
  chat_error(chat(R"("tool_choice": {"type": "function", "function": {"name": "f"}})"), "tool_choice");
  const std::string tools =
      R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])";
  chat_error(chat(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}})"), "tool_choice");
  chat_error(chat(tools + R"(, "tool_choice": "sometimes")"), "tool_choice");
  EXPECT_NE(parse_chat_request(chat(tools + R"(, "tool_choice": "required")")).grammar, nullptr);
  EXPECT_TRUE(parse_chat_request(chat(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}})"))
                  .parse_tool_calls);
  chat_error(chat(R"("functions": [])"), "functions");
  EXPECT_NO_THROW(parse_chat_request(chat(R"("logit_bias": {}, "response_format": {"type": "text"})")));
}

TEST(ServerProtocol, MessagesAreNormalizedForTheTemplate) {
  ChatRequest r = parse_chat_request(R"({"messages": [
      {"role": "developer", "content": [{"type": "text", "text": "be "}, {"type": "text", "text": "brief"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]})");
  const auto& m = r.messages.array();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].find("role")->as_string(), "system");
  EXPECT_EQ(m[0].find("content")->as_string(), "be brief");
  EXPECT_EQ(m[1].find("content")->as_string(), "");
  const auto& call = m[1].find("tool_calls")->array()[0];
  const auto* args = call.find("function")->find("arguments");
  ASSERT_TRUE(args->is_object());  // templates render a mapping with tojson
  EXPECT_EQ(args->find("city")->as_string(), "Paris");
  chat_error(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}]})",
             "messages[0].tool_calls[0].function.arguments");
}

TEST(ServerProtocol, Tools) {
  const std::string tool = R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}})";
  ChatRequest r = parse_chat_request(chat(R"("tools": [)" + tool + "]"));
  EXPECT_TRUE(r.parse_tool_calls);
  ASSERT_TRUE(r.tools.is_array());
  EXPECT_EQ(r.tools.array()[0].find("function")->find("name")->as_string(), "get_weather");
  r = parse_chat_request(chat(R"("tool_choice": "none", "tools": [)" + tool + "]"));
  EXPECT_FALSE(r.parse_tool_calls);
  EXPECT_TRUE(r.tools.is_undefined());
  chat_error(chat(R"("tools": {})"), "tools");
  chat_error(chat(R"("tools": [{"type": "code"}])"), "tools[0].type");
  chat_error(chat(R"("tools": [{"type": "function", "function": {"description": "x"}}])"), "tools[0].function.name");
  chat_error(chat(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": []}}])"),
             "tools[0].function.parameters");
}

TEST(ServerProtocol, CompletionPrompts) {
  CompletionRequest r = parse_completion_request(R"({"prompt": "hello", "logprobs": 2, "echo": false})");
  EXPECT_EQ(r.text_prompts, std::vector<std::string>{"hello"});
  EXPECT_EQ(r.logprobs, 2);
  EXPECT_EQ(r.sampling.top_logprobs, 2);
  r = parse_completion_request(R"({"prompt": ["a", "b"]})");
  EXPECT_EQ(r.text_prompts.size(), 2u);
  EXPECT_EQ(r.logprobs, -1);
  r = parse_completion_request(R"({"prompt": [1, 2, 3]})");
  ASSERT_EQ(r.token_prompts.size(), 1u);
  EXPECT_EQ(r.token_prompts[0], (std::vector<int32_t>{1, 2, 3}));
  r = parse_completion_request(R"({"prompt": [[1], [2, 3]]})");
  EXPECT_EQ(r.token_prompts.size(), 2u);
  completion_error("{}", "prompt");
  completion_error(R"({"prompt": []})", "prompt");
  completion_error(R"({"prompt": 5})", "prompt");
  completion_error(R"({"prompt": [1, -2]})", "prompt");
  completion_error(R"({"prompt": [1, "a"]})", "prompt");
  completion_error(R"({"prompt": [[1], 2]})", "prompt[1]");
  completion_error(R"({"prompt": ["a", 2]})", "prompt[1]");
  completion_error(R"({"prompt": "a", "echo": true})", "echo");
  completion_error(R"({"prompt": "a", "suffix": "b"})", "suffix");
  completion_error(R"({"prompt": "a", "logprobs": 30})", "logprobs");
  completion_error(R"({"prompt": "a", "logprobs": true})", "logprobs");
  completion_error(R"({"prompt": "a", "best_of": 3})", "best_of");
}

TEST(ServerProtocol, FitToContext) {
  ChatRequest r = parse_chat_request(chat(""));
  fit_to_context(r, 10, 100, "messages");
  EXPECT_EQ(r.sampling.max_tokens, 90);  // no max_tokens: the rest of the context
  ApiError e = expect_error([&] { fit_to_context(r, 100, 100, "messages"); }, 400, "messages");
  EXPECT_EQ(e.code, "context_length_exceeded");
  r = parse_chat_request(chat(R"("max_tokens": 50)"));
  e = expect_error([&] { fit_to_context(r, 60, 100, "messages"); }, 400, "max_tokens");
  EXPECT_EQ(e.code, "context_length_exceeded");
  fit_to_context(r, 50, 100, "messages");
  EXPECT_EQ(r.sampling.max_tokens, 50);
  r = parse_chat_request(chat(R"("min_tokens": 20)"));
  expect_error([&] { fit_to_context(r, 90, 100, "messages"); }, 400, "min_tokens");
}

TEST(ServerProtocol, ErrorBodyIsOpenAIShaped) {
  json j = json::parse(error_body(ApiError(400, "bad temperature", "temperature")));
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["message"], "bad temperature");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "temperature");
  EXPECT_TRUE(j["error"]["code"].is_null());
  j = json::parse(error_body(ApiError(401, "no", "", "invalid_api_key")));
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["code"], "invalid_api_key");
}

TEST(ServerProtocol, ChatResponseTokenIdsMatchLogprobsIncludingStopToken) {
  ChatRequest r = parse_chat_request(chat(R"("logprobs": true, "top_logprobs": 1, "return_token_ids": true, "n": 2)"));
  engine::Completion a, b;
  a.token_ids = {5, 6, 99};  // 99: the stop token that ended generation
  a.logprobs = {-1.0f, -2.0f, -0.5f};
  a.top_logprobs = {{{7, -0.1f}}, {{6, -2.0f}}, {{99, -0.5f}}};
  a.text = "t5t6";
  a.finish_reason = "stop";
  a.model_version = 3;
  b.token_ids = {8};
  b.logprobs = {-3.0f};
  b.top_logprobs = {{{8, -3.0f}}};
  b.text = "t8";
  b.finish_reason = "length";
  std::vector<ChatChoice> choices(2);
  choices[0].completion = &a;
  choices[0].content = a.text;
  choices[0].finish_reason = "stop";
  choices[1].completion = &b;
  choices[1].content = b.text;
  choices[1].finish_reason = "length";
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  json j = json::parse(chat_response({"chatcmpl-x", 10, "m"}, r, prompt, choices, {nullptr, &fake_text}));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["prompt_token_ids"], json(prompt));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j["usage"]["total_tokens"], 8);
  const json& c0 = j["choices"][0];
  EXPECT_EQ(c0["message"]["role"], "assistant");
  EXPECT_EQ(c0["message"]["content"], "t5t6");
  EXPECT_EQ(c0["token_ids"], json({5, 6, 99}));
  EXPECT_EQ(c0["model_version"], 3);
  ASSERT_EQ(c0["logprobs"]["content"].size(), 3u);
  EXPECT_EQ(c0["logprobs"]["content"][2]["token"], "<|im_end|>");
  EXPECT_FLOAT_EQ(c0["logprobs"]["content"][1]["logprob"].get<float>(), -2.0f);
  EXPECT_EQ(c0["logprobs"]["content"][0]["top_logprobs"][0]["token"], "t7");
  EXPECT_EQ(c0["logprobs"]["content"][0]["bytes"], json({'t', '5'}));
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");

  // Without the extension the response is plain OpenAI.
  ChatRequest plain = parse_chat_request(chat(""));
  j = json::parse(chat_response({"chatcmpl-x", 10, "m"}, plain, prompt, {choices[0]}, {nullptr, &fake_text}));
  EXPECT_FALSE(j.contains("prompt_token_ids"));
  EXPECT_FALSE(j["choices"][0].contains("token_ids"));
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
}

TEST(ServerProtocol, ToolCallsInResponseAndChunks) {
  ChatRequest r = parse_chat_request(chat(""));
  engine::Completion c;
  c.token_ids = {1};
  c.logprobs = {-1.0f};
  ChatChoice ch;
  ch.completion = &c;
  ch.tool_calls = {{"call_1", "get", R"({"a": 1})"}};
  ch.finish_reason = "tool_calls";
  json j = json::parse(chat_response({"id", 1, "m"}, r, {1}, {ch}, {nullptr, &fake_text}));
  const json& msg = j["choices"][0]["message"];
  EXPECT_TRUE(msg["content"].is_null());
  EXPECT_EQ(msg["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(msg["tool_calls"][0]["type"], "function");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["arguments"], R"({"a": 1})");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");

  ChunkDelta d;
  d.index = 2;
  d.tool_calls = ch.tool_calls;
  j = json::parse(chat_chunk({"id", 1, "m"}, r, d, {nullptr, &fake_text}));
  EXPECT_EQ(j["object"], "chat.completion.chunk");
  EXPECT_EQ(j["choices"][0]["index"], 2);
  EXPECT_EQ(j["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
  EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
}

TEST(ServerProtocol, CompletionResponsePerPromptIds) {
  CompletionRequest r = parse_completion_request(R"({"prompt": [[1, 2], [3]], "n": 2, "logprobs": 0, "return_token_ids": true})");
  engine::Completion c[4];
  for (int i = 0; i < 4; ++i) {
    c[i].token_ids = {10 + i, 99};
    c[i].logprobs = {-1.0f, -2.0f};
    c[i].top_logprobs = {{}, {}};
    c[i].text = "x";
    c[i].finish_reason = "stop";
  }
  json j = json::parse(completion_response({"cmpl-x", 1, "m"}, r, {{1, 2}, {3}}, {&c[0], &c[1], &c[2], &c[3]},
                                           {nullptr, &fake_text}));
  EXPECT_EQ(j["object"], "text_completion");
  ASSERT_EQ(j["choices"].size(), 4u);
  EXPECT_EQ(j["choices"][1]["prompt_token_ids"], json({1, 2}));
  EXPECT_EQ(j["choices"][2]["prompt_token_ids"], json({3}));
  EXPECT_EQ(j["choices"][3]["token_ids"], json({13, 99}));
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"t10", "<|im_end|>"}));
  EXPECT_EQ(lp["text_offset"], json({0, 3}));
  EXPECT_EQ(lp["token_logprobs"].size(), 2u);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);
}
