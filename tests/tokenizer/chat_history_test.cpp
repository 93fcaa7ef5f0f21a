// tok::ChatHistory::splice with the real Qwen3 and Llama-3 chat templates (tests/js/node_modules):
// a conversation the agent sends back with the model's own assistant turn must give prompt ids that
// start with the recorded prompt + sampled ids, even where a fresh rendering differs (Qwen3 strips
// <think> from earlier turns; tool-call arguments are re-serialized), and must not match when the
// agent edited the turn or the conversation before it.
#include <gtest/gtest.h>

#include "core/error.h"
#include "oracle_util.h"
#include "tokenizer/chat_history.h"

using namespace trinity;
using namespace trinity::tok;
using tok::jinja::Value;

namespace {

struct Fixture {
  explicit Fixture(const std::string& name) : chat(ChatFormatter::load(tok::testing::model_dir(name))) {}
  ChatFormatter chat;
  const Tokenizer& tok() const { return chat.tokenizer(); }
  std::vector<int32_t> ids(const std::string& text) const { return tok().encode(text); }
  int32_t id(const std::string& token) const { return *tok().token_to_id(token); }

  // Records a call of `messages` whose sampled answer is `text` + `end` (the end-of-turn token).
  RecordedCall record(ChatHistory& h, const Value& messages, const std::string& text, int32_t end,
                      const std::string& answer_key, const ChatOptions& o, const std::string& id_ = "c") const {
    RecordedCall c;
    c.id = id_;
    auto sp = h.splice(chat, messages, o);
    c.prompt_ids = sp ? sp->ids : chat.encode(messages, o, false).ids;
    c.ids = ids(text);
    c.ids.push_back(end);
    c.logprobs.assign(c.ids.size(), -0.5f);
    c.finish_reason = "stop";
    c.render_key = chat.render(messages, o);
    c.answer_key = answer_key;
    h.add(c);
    return c;
  }
};

ChatOptions gen() {
  ChatOptions o;
  o.add_generation_prompt = true;
  return o;
}

// A call's prompt followed by its sampled ids: what the next call's prompt must start with.
std::vector<int32_t> sequence(const RecordedCall& c) {
  std::vector<int32_t> s = c.prompt_ids;
  s.insert(s.end(), c.ids.begin(), c.ids.end());
  return s;
}

bool starts_with(const std::vector<int32_t>& a, const std::vector<int32_t>& p) {
  return a.size() >= p.size() && std::equal(p.begin(), p.end(), a.begin());
}

}  // namespace

TEST(ChatHistorySplice, Qwen3KeepsTheThinkBlockOfEarlierTurns) {
  tok::testing::require_node_modules();
  Fixture f("qwen3");
  ChatHistory h;
  const ChatOptions o = gen();
  const Value m1 = Value::from_json(R"([{"role":"user","content":"What is 2+3?"}])");
  const std::string answer = "<think>\nadd them\n</think>\n\nThe answer is 5.";
  const RecordedCall c1 = f.record(h, m1, answer, f.id("<|im_end|>"), assistant_key(answer, {}), o);

  const Value m2 = Value::from_json(nlohmann::json::array({{{"role", "user"}, {"content", "What is 2+3?"}},
                                                           {{"role", "assistant"}, {"content", answer}},
                                                           {{"role", "user"}, {"content", "And 3+4?"}}})
                                        .dump());
  // A fresh rendering drops the earlier turn's <think> block: it does not extend prompt 1 + answer.
  const std::vector<int32_t> seq1 = sequence(c1);
  EXPECT_FALSE(starts_with(f.chat.encode(m2, o, false).ids, seq1));

  std::string why;
  const auto sp = h.splice(f.chat, m2, o, &why);
  ASSERT_TRUE(sp) << why;
  EXPECT_EQ(sp->via, "c");
  ASSERT_TRUE(starts_with(sp->ids, seq1));
  const std::vector<int32_t> tail(sp->ids.begin() + static_cast<long>(seq1.size()), sp->ids.end());
  EXPECT_EQ(f.tok().decode(tail), "\n<|im_start|>user\nAnd 3+4?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatHistorySplice, Qwen3ToolCallsWithReserializedArguments) {
  tok::testing::require_node_modules();
  Fixture f("qwen3");
  ChatHistory h;
  ChatOptions o = gen();
  o.tools = Value::from_json(
      R"([{"type":"function","function":{"name":"calculator","parameters":{"type":"object","properties":{"expression":{"type":"string"}}}}}])");
  const Value m1 = Value::from_json(R"([{"role":"user","content":"What is (2+3)*4?"}])");
  const std::string sampled =
      "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"(2+3)*4\"}}\n</tool_call>";
  // The server answers content null and one tool call; the client echoes it with compact arguments.
  const RecordedCall c1 = f.record(h, m1, sampled, f.id("<|im_end|>"),
                                   assistant_key("", {{"calculator", R"({"expression": "(2+3)*4"})"}}), o);
  const Value m2 = Value::from_json(R"([{"role":"user","content":"What is (2+3)*4?"},
      {"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"calculator","arguments":"{\"expression\":\"(2+3)*4\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"20"}])");
  std::string why;
  const auto sp = h.splice(f.chat, m2, o, &why);
  ASSERT_TRUE(sp) << why;
  const std::vector<int32_t> seq1 = sequence(c1);
  ASSERT_TRUE(starts_with(sp->ids, seq1));
  const std::vector<int32_t> tail(sp->ids.begin() + static_cast<long>(seq1.size()), sp->ids.end());
  EXPECT_EQ(f.tok().decode(tail),
            "\n<|im_start|>user\n<tool_response>\n20\n</tool_response><|im_end|>\n<|im_start|>assistant\n");

  // Third turn: the chain continues from the spliced second prompt.
  const std::string final_answer = "The answer is 20.";
  const RecordedCall c2 = f.record(h, m2, final_answer, f.id("<|im_end|>"), assistant_key(final_answer, {}), o, "c2");
  EXPECT_EQ(c2.prompt_ids, sp->ids);
  nlohmann::json m3 = nlohmann::json::parse(m2.to_json());
  m3.push_back({{"role", "assistant"}, {"content", final_answer}});
  m3.push_back({{"role", "user"}, {"content", "Thanks!"}});
  const auto sp3 = h.splice(f.chat, Value::from_json(m3.dump()), o, &why);
  ASSERT_TRUE(sp3) << why;
  EXPECT_EQ(sp3->via, "c2");
  const std::vector<int32_t> seq2 = sequence(c2);
  EXPECT_TRUE(starts_with(sp3->ids, seq2));
}

TEST(ChatHistorySplice, Llama3MultiTurn) {
  tok::testing::require_node_modules();
  Fixture f("llama3");
  ChatHistory h;
  const ChatOptions o = gen();
  const Value m1 = Value::from_json(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])");
  const std::string answer = "Hello! How can I help?";
  const RecordedCall c1 = f.record(h, m1, answer, f.id("<|eot_id|>"), assistant_key(answer, {}), o);
  const Value m2 = Value::from_json(nlohmann::json::array({{{"role", "system"}, {"content", "Be brief."}},
                                                           {{"role", "user"}, {"content", "Hi"}},
                                                           {{"role", "assistant"}, {"content", answer}},
                                                           {{"role", "user"}, {"content", "Bye"}}})
                                        .dump());
  std::string why;
  const auto sp = h.splice(f.chat, m2, o, &why);
  ASSERT_TRUE(sp) << why;
  const std::vector<int32_t> seq1 = sequence(c1);
  ASSERT_TRUE(starts_with(sp->ids, seq1));
  // Here the template renders the turn exactly as sampled: the splice equals the fresh rendering.
  EXPECT_EQ(sp->ids, f.chat.encode(m2, o, false).ids);
}

TEST(ChatHistorySplice, NoMatchWhenTheAgentEditedTheTurnOrWhatCameBefore) {
  tok::testing::require_node_modules();
  Fixture f("qwen3");
  ChatHistory h;
  const ChatOptions o = gen();
  std::string why;
  EXPECT_FALSE(h.splice(f.chat, Value::from_json(R"([{"role":"user","content":"x"}])"), o, &why));
  EXPECT_NE(why.find("no earlier chat call"), std::string::npos);
  const Value m1 = Value::from_json(R"([{"role":"user","content":"What is 2+3?"}])");
  f.record(h, m1, "5", f.id("<|im_end|>"), assistant_key("5", {}), o);
  // Edited answer.
  EXPECT_FALSE(h.splice(f.chat, Value::from_json(R"([{"role":"user","content":"What is 2+3?"},
      {"role":"assistant","content":"five"},{"role":"user","content":"ok"}])"),
                        o, &why));
  EXPECT_NE(why.find("no assistant message equals"), std::string::npos) << why;
  // Same answer after a different question (the conversation before it was rewritten).
  EXPECT_FALSE(h.splice(f.chat, Value::from_json(R"([{"role":"user","content":"What is 1+4?"},
      {"role":"assistant","content":"5"},{"role":"user","content":"ok"}])"),
                        o));
  // Unchanged: matches.
  EXPECT_TRUE(h.splice(f.chat, Value::from_json(R"([{"role":"user","content":"What is 2+3?"},
      {"role":"assistant","content":"5"},{"role":"user","content":"ok"}])"),
                       o));
}

TEST(ChatHistory, AssistantKeyComparesArgumentsAsJson) {
  const Value a = Value::from_json(
      R"({"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":"{\"b\":1,\"a\":[1,2]}"}}]})");
  const Value b = Value::from_json(
      R"({"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":[1,2],"b":1}}}]})");
  EXPECT_EQ(assistant_key(a), assistant_key(b));
  EXPECT_EQ(assistant_key(a), assistant_key("", {{"f", R"({"a": [1, 2], "b": 1})"}}));
  EXPECT_NE(assistant_key(a), assistant_key("", {{"f", R"({"a": [1, 2], "b": 2})"}}));
  EXPECT_NE(assistant_key(a), assistant_key("", {{"g", R"({"a": [1, 2], "b": 1})"}}));
}

TEST(ChatHistory, BoundedAndTake) {
  ChatHistory h(2);
  h.add({});
  h.add({});
  EXPECT_THROW(h.add({}), trinity::ValueError);
  EXPECT_EQ(h.take().size(), 2u);
  EXPECT_EQ(h.size(), 0u);
}
