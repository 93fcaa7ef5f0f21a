// tool_call_workflow and its Tool-N1 prompt / scoring (rewards/tool_n1.h). The golden prompt and
// every score below were produced by upstream's construct_prompt / compute_score_v0_toolN1 under
// CPython on the same inputs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "workflow/fake_client.h"
#include "workflow/rewards/tool_n1.h"
#include "workflow/workflow.h"

namespace trinity::workflow {
namespace {

using ojson = nlohmann::ordered_json;
using testing::FakeModelClient;
using testing::FakeReply;

// A ToolACE-style row (tools and answer are JSON text, as examples/grpo_toolcall/get_toolace_data.py
// writes them) with every conversation role, a non-ASCII description and an unknown "from".
const char* const kRow =
    R"J({"raw_system": "You are an expert in composing functions. Here is a list of functions in JSON format that you can invoke:\n", "tools": "[{\"name\": \"get_weather\", \"description\": \"Weather for a city, e.g. Z\\u00fcrich\", \"parameters\": {\"type\": \"dict\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\", \"default\": 1}}, \"required\": [\"city\"]}}, {\"name\": \"convert\", \"description\": \"Units\", \"parameters\": {\"type\": \"dict\", \"properties\": {\"value\": {\"type\": \"float\"}}}}]", "conversations": [{"from": "user", "value": "Weather in Paris?"}, {"from": "function_call", "value": "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"}, {"from": "observation", "value": "{\"temp\": 20.5}"}, {"from": "assistant", "value": "It is 20.5 C."}, {"from": "human", "value": "And Rome for 2 days?"}, {"from": "other", "value": "dropped"}], "answer": "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]"})J";

const char* const kGoldenPrompt =
    R"J([{"role": "system", "content": "You are an expert in composing functions. Here is a list of functions in JSON format that you can invoke:\n# Tool\n\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather for a city, e.g. Z\\u00fcrich\", \"parameters\": {\"type\": \"dict\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\", \"default\": 1}}, \"required\": [\"city\"]}}}\n{\"type\": \"function\", \"function\": {\"name\": \"convert\", \"description\": \"Units\", \"parameters\": {\"type\": \"dict\", \"properties\": {\"value\": {\"type\": \"float\"}}}}}\n</tools>\n\nIn each action step, you MUST:\n1. Think about the reasoning process in the mind and enclosed your reasoning within <think> </think> XML tags.\n2. Then, provide a json object with function names and arguments within <tool_call></tool_call> XML tags. i.e., <tool_call>[{\"name\": <function-name>, \"arguments\": <args-json-object>}, {\"name\": <function-name2>, \"arguments\": <args-json-object2>}, ...]</tool_call>\n3. Make sure both the reasoning and the tool call steps are included together in one single reply.\nA complete reply example is: <think>To address the query, I need to send the email to Bob and then buy the banana through walmart. </think> <tool_call> [{\"name\": \"email\", \"arguments\": {\"receiver\": \"Bob\", \"content\": \"I will bug banana through walmart\"}}, {\"name\": \"walmart\", \"arguments\": {\"input\": \"banana\"}}]</tool_call>. Please make sure the type of the arguments is correct.\n"}, {"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "\"[{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": {\\\"city\\\": \\\"Paris\\\"}}]\""}, {"role": "tool", "content": "{\"temp\": 20.5}"}, {"role": "assistant", "content": "It is 20.5 C."}, {"role": "user", "content": "And Rome for 2 days?"}])J";

TEST(ToolN1, PromptMatchesUpstreamGolden) {
  EXPECT_EQ(tool_n1::construct_prompt(ojson::parse(kRow)), ojson::parse(kGoldenPrompt).dump());
  // Byte for byte as Python's json.dumps wrote the system text (ensure_ascii, ", " / ": ").
  const ojson p = ojson::parse(tool_n1::construct_prompt(ojson::parse(kRow)));
  EXPECT_NE(p[0]["content"].get<std::string>().find(
                "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather for a "
                "city, e.g. Z\\u00fcrich\""),
            std::string::npos);
  EXPECT_EQ(p.size(), 6u);  // the unknown "from" turn is dropped
}

TEST(ToolN1, PromptRowErrors) {
  for (const char* key : {"tools", "raw_system", "conversations"}) {
    ojson row = ojson::parse(kRow);
    row.erase(key);
    try {
      tool_n1::construct_prompt(row);
      FAIL() << key;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + key + "\""), std::string::npos) << e.what();
    }
  }
  ojson bad = ojson::parse(kRow);
  bad["tools"] = "not json";
  EXPECT_THROW(tool_n1::construct_prompt(bad), ValueError);
  bad["tools"] = ojson::parse("[]");  // a list value is used as is
  EXPECT_NO_THROW(tool_n1::construct_prompt(bad));
}

TEST(ToolN1, ScoreMatchesUpstream) {
  struct Case {
    std::string what, response, truth;
    double score;
  };
  const std::vector<Case> cases = {
      {"exact match, arguments in another key order",
       "<think>need weather</think><tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"days\": 2, \"city\": "
       "\"Rome\"}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 1.0},
      {"a dict counts as a one-call list",
       "<think>x</think>\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": "
       "2}}</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 1.0},
      {"wrong argument value (name-only match)",
       "<think>x</think><tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Roma\", \"days\": "
       "2}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"2.0 is not 2 (json.dumps differs)",
       "<think>x</think><tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": "
       "2.0}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"missing think tags",
       "<tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"two think blocks",
       "<think>a</think><think>b</think><tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", "
       "\"days\": 2}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"</think> after the first <tool_call>",
       "<tool_call>[]</tool_call><think>x</think><tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Rome\", \"days\": 2}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"a call without arguments (bad format)",
       "<think>x</think><tool_call>[{\"name\": \"get_weather\", \"args\": {\"city\": \"Rome\", \"days\": "
       "2}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"invalid JSON in the last tool_call",
       "<think>x</think><tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": "
       "2}</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"no tool_call at all", "<think>x</think> no call",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"a JSON string holding the list",
       "<think>x</think><tool_call>\"[{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": {\\\"city\\\": "
       "\\\"Rome\\\", \\\"days\\\": 2}}]\"</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 1.0},
      {"empty list against empty gold", "<think>x</think><tool_call>[]</tool_call>", "[]", 1.0},
      {"empty list against a non-empty gold", "<think>x</think><tool_call>[]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"only the last tool_call counts",
       "<think>x</think><tool_call>[{\"name\": \"a\", \"arguments\": {}}]</tool_call> <tool_call>[{\"name\": "
       "\"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 1.0},
      {"a duplicate call (multiset)",
       "<think>x</think><tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}, "
       "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"a call that is not an object", "<think>x</think><tool_call>[\"get_weather\"]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"an unhashable name", "<think>x</think><tool_call>[{\"name\": [\"l\"], \"arguments\": {}}]</tool_call>",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]", 0.0},
      {"a gold answer encoded twice",
       "<think>x</think><tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": "
       "2}}]</tool_call>",
       "\"[{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": {\\\"city\\\": \\\"Rome\\\", \\\"days\\\": 2}}]\"",
       1.0},
  };
  for (const auto& c : cases) EXPECT_EQ(tool_n1::score(c.response, ojson(c.truth)), c.score) << c.what;
  // A list-valued gold (not JSON text) is used as is.
  EXPECT_EQ(tool_n1::score(cases[0].response, ojson::parse(cases[0].truth)), 1.0);
}

TEST(ToolN1, MalformedGoldIsAnError) {
  const std::string ok = R"(<think>x</think><tool_call>[{"name": "f", "arguments": {}}]</tool_call>)";
  EXPECT_THROW(tool_n1::score(ok, ojson("not json")), ValueError);
  EXPECT_THROW(tool_n1::score(ok, ojson(R"([{"name": "f"}])")), ValueError);  // upstream: KeyError
  EXPECT_EQ(tool_n1::score(ok, ojson(R"(["f"])")), 0.0);                      // upstream: TypeError -> 0
  // A payload that is no list or object scores 0 (upstream raises on iterating a number).
  EXPECT_EQ(tool_n1::score("<think>x</think><tool_call>5</tool_call>", ojson(R"([])")), 0.0);
}

FakeModelClient byte_client() {
  return FakeModelClient(testing::byte_tokenizer(), {258});
}

TEST(ToolCallWorkflow, ScoresEachSampleAgainstTheRowAnswer) {
  for (const char* name : {"tool_call_workflow", "toolcall_workflow"}) {
    FakeModelClient m = byte_client();
    m.push(FakeReply{
        R"(<think>ok</think><tool_call>[{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]</tool_call>)"});
    m.push(FakeReply{
        R"(<think>ok</think><tool_call>[{"name": "get_weather", "arguments": {"city": "Rome"}}]</tool_call>)"});
    buffer::Task t;
    t.raw = kRow;
    t.rollout_args.temperature = 0.7;
    auto wf = make_workflow(name, t);
    EXPECT_TRUE(wf->can_repeat());
    RunContext ctx;
    ctx.model = &m;
    ctx.repeat_times = 2;
    ctx.run_id_base = 4;
    const auto exps = wf->run(ctx);
    ASSERT_EQ(exps.size(), 2u);
    EXPECT_EQ(*exps[0].reward, 1.0);
    EXPECT_EQ(*exps[1].reward, 0.0);
    EXPECT_EQ(exps[0].metrics.at("accuracy"), 1.0);
    EXPECT_EQ(exps[1].eid.run, 5);
    const auto calls = m.calls();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].opt.n, 2);
    EXPECT_EQ(calls[0].opt.temperature, 0.7);
    EXPECT_EQ(calls[0].messages_json, ojson::parse(kGoldenPrompt).dump());
    const ojson msgs = ojson::parse(exps[0].messages);
    EXPECT_EQ(msgs.back()["role"], "assistant");
  }
}

TEST(ToolCallWorkflow, RowWithoutAnswerGetsZeroAndBadRowsFailEarly) {
  FakeModelClient m = byte_client();
  m.push(FakeReply{R"(<think>ok</think><tool_call>[]</tool_call>)"});
  ojson row = ojson::parse(kRow);
  row.erase("answer");
  buffer::Task t;
  t.raw = row.dump();
  auto wf = make_workflow("tool_call_workflow", t);
  RunContext ctx;
  ctx.model = &m;
  const auto exps = wf->run(ctx);
  ASSERT_EQ(exps.size(), 1u);
  EXPECT_EQ(*exps[0].reward, 0.0);
  buffer::Task bad;
  bad.raw = R"({"prompt": "hi"})";
  EXPECT_THROW(make_workflow("tool_call_workflow", bad), ValueError);
}

}  // namespace
}  // namespace trinity::workflow
