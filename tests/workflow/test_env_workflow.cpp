// env_workflow against scripted environments (no network): the concatenated layout is exactly
// prompt ids + sampled ids + glue ids with the mask on sampled ids only; the step-wise layout gives
// one experience per turn with its anchor; actions are extracted (text, pattern, tool call); reward
// rules; max_steps; the token budget; reset args from the task row; env failures become
// "[env] <reason>:" with the session closed on every path; connect retries; config errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "workflow/env_workflow.h"
#include "workflow/fake_client.h"
#include "workflow/workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;
using testing::FakeModelClient;
using testing::FakeReply;

// A scripted environment: observation i is "obs i"; rewards[i] and done after `done_after` steps.
struct Script {
  std::vector<double> rewards = {0.0, 1.0};
  int64_t done_after = 2;  // 0 = never
  std::string schema;
  int64_t fail_on_step = 0;  // 1-based step that throws
  env::FailReason fail_reason = env::FailReason::kClosed;
  // What the workflow sent.
  std::vector<std::string> actions;
  std::string reset_args;
  int closes = 0, opens = 0, connect_failures = 0;
};

class ScriptedSession : public env::Session {
 public:
  explicit ScriptedSession(Script& s) : s_(s) {}
  ~ScriptedSession() override { close(); }
  env::StepResult reset(const std::string& args) override {
    s_.reset_args = args;
    return result(0, std::nullopt, false);
  }
  env::StepResult step(const std::string& action) override {
    s_.actions.push_back(action);
    const int64_t n = static_cast<int64_t>(s_.actions.size());
    if (n == s_.fail_on_step) throw env::EnvError(s_.fail_reason, "step on test://env: the server went away");
    const double r = n - 1 < static_cast<int64_t>(s_.rewards.size()) ? s_.rewards[static_cast<size_t>(n - 1)] : 0.0;
    return result(n, r, s_.done_after > 0 && n >= s_.done_after);
  }
  std::string schema() override { return s_.schema; }
  std::string state() override { return "{}"; }
  void close() noexcept override {
    if (!closed_) ++s_.closes;
    closed_ = true;
  }

 private:
  env::StepResult result(int64_t i, std::optional<double> r, bool done) {
    env::StepResult out;
    out.observation_text = strcat("obs ", i);
    out.observation_json = json{{"text", out.observation_text}, {"pos", i}}.dump();
    out.reward = r;
    out.done = done;
    return out;
  }
  Script& s_;
  bool closed_ = false;
};

SessionOpener opener_for(Script& s) {
  return [&s](const env::SessionOptions& o) -> std::unique_ptr<env::Session> {
    EXPECT_EQ(o.url, "http://127.0.0.1:1");
    if (s.connect_failures > 0) {
      --s.connect_failures;
      throw env::EnvError(env::FailReason::kConnect, "connect to http://127.0.0.1:1: connection refused");
    }
    ++s.opens;
    return std::make_unique<ScriptedSession>(s);
  };
}

buffer::Task task_with(json args, json row = json::object()) {
  buffer::Task t;
  args["env_url"] = "http://127.0.0.1:1";
  t.workflow = "env_workflow";
  t.workflow_args = args.dump();
  t.raw = row.dump();
  t.task_desc = "walk";
  return t;
}

FakeModelClient client() {
  return FakeModelClient(testing::byte_tokenizer(), {258});
}

std::vector<buffer::Experience> run(const buffer::Task& t, Script& s, FakeModelClient& m) {
  auto wf = make_env_workflow(t, {}, opener_for(s));
  RunContext ctx;
  ctx.task = &t;
  ctx.model = &m;
  return wf->run(ctx);
}

TEST(EnvWorkflow, ConcatenatedLayoutIsExactIdsWithMask) {
  Script s;
  auto m = client();
  m.push({"right"});
  m.push({"go right"});
  const auto t = task_with({{"system_prompt", "sys"}, {"observation_template", "At {pos}: {text} ({remaining} left)"}});
  const auto exps = run(t, s, m);
  ASSERT_EQ(exps.size(), 1u);
  const auto& e = exps[0];
  const auto calls = m.calls();
  ASSERT_EQ(calls.size(), 2u);
  // Turn 1 continues exactly the ids so far (prompt + sampled + glue).
  const auto& tok = m.tokenizer();
  EXPECT_EQ(tok.decode(calls[0].prompt_ids),
            "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nAt 0: obs 0 (10 left)<|im_end|>\n"
            "<|im_start|>assistant\n");
  std::vector<int32_t> expect = calls[0].prompt_ids;
  for (int32_t id : calls[0].samples[0].ids) expect.push_back(id);
  const auto glue = tok.encode("\n<|im_start|>user\nAt 1: obs 1 (9 left)<|im_end|>\n<|im_start|>assistant\n");
  expect.insert(expect.end(), glue.begin(), glue.end());
  EXPECT_EQ(calls[1].prompt_ids, expect);
  for (int32_t id : calls[1].samples[0].ids) expect.push_back(id);
  EXPECT_EQ(e.tokens, expect);
  EXPECT_EQ(e.prompt_length, static_cast<int64_t>(calls[0].prompt_ids.size()));
  // Mask: sampled 1, glue 0; logprobs aligned, glue 0.
  const size_t n0 = calls[0].samples[0].ids.size(), n1 = calls[1].samples[0].ids.size();
  ASSERT_EQ(e.action_mask.size(), n0 + glue.size() + n1);
  for (size_t i = 0; i < e.action_mask.size(); ++i) {
    const bool sampled = i < n0 || i >= n0 + glue.size();
    EXPECT_EQ(e.action_mask[i], sampled ? 1 : 0) << i;
    if (!sampled) {
      EXPECT_EQ(e.logprobs[i], 0.0f);
    }
  }
  EXPECT_EQ(e.logprobs[0], calls[0].samples[0].logprobs[0]);
  EXPECT_EQ(e.logprobs[n0 + glue.size()], calls[1].samples[0].logprobs[0]);
  // Actions, reward, metrics, messages, session closed once.
  ASSERT_EQ(s.actions.size(), 2u);
  EXPECT_EQ(json::parse(s.actions[0]), (json{{"message", "right"}}));
  EXPECT_EQ(json::parse(s.actions[1]), (json{{"message", "go right"}}));
  EXPECT_EQ(e.reward, 1.0);
  EXPECT_EQ(e.metrics.at("env_steps"), 2.0);
  EXPECT_EQ(e.metrics.at("env_done"), 1.0);
  EXPECT_EQ(e.truncate_status, buffer::TruncateStatus::kNone);
  EXPECT_EQ(json::parse(e.messages).size(), 5u);
  EXPECT_EQ(s.opens, 1);
  EXPECT_EQ(s.closes, 1);
}

TEST(EnvWorkflow, ActionPatternAndField) {
  Script s;
  auto m = client();
  m.push({"I think ```left``` then ```right```"});
  m.push({"no block here"});
  const auto t = task_with({{"action_pattern", "```(.*?)```"}, {"action_field", "move"}});
  const auto exps = run(t, s, m);
  ASSERT_EQ(s.actions.size(), 2u);
  EXPECT_EQ(json::parse(s.actions[0]), (json{{"move", "right"}}));  // the last match
  EXPECT_EQ(json::parse(s.actions[1]), (json{{"move", "no block here"}}));
  EXPECT_EQ(exps[0].metrics.at("invalid_actions"), 1.0);
}

TEST(EnvWorkflow, ToolCallActionsUseTheSchema) {
  Script s;
  s.schema = json{{"action",
                   {{"title", "CalcAction"},
                    {"type", "object"},
                    {"properties", {{"tool", {{"type", "string"}}}, {"metadata", {{"type", "object"}}}}}}}}
                 .dump();
  auto m = client();
  m.push({"Let me compute.<tool_call>\n{\"name\": \"step\", \"arguments\": {\"tool\": \"calculate\"}}\n</tool_call>"});
  m.push({"{\"name\": \"step\", \"arguments\": {\"tool\": \"answer\"}}"});
  const auto t = task_with({{"action_format", "tool_call"}});
  const auto exps = run(t, s, m);
  ASSERT_EQ(s.actions.size(), 2u);
  EXPECT_EQ(json::parse(s.actions[0]), (json{{"tool", "calculate"}}));
  EXPECT_EQ(json::parse(s.actions[1]), (json{{"tool", "answer"}}));
  const json tools = json::parse(exps[0].tools);
  EXPECT_EQ(tools[0]["function"]["name"], "step");
  EXPECT_FALSE(tools[0]["function"]["parameters"]["properties"].contains("metadata"));
  EXPECT_FALSE(tools[0]["function"]["parameters"].contains("title"));
  const json msgs = json::parse(exps[0].messages);
  EXPECT_EQ(msgs[2]["content"], "Let me compute.");
  EXPECT_EQ(json::parse(msgs[2]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            (json{{"tool", "calculate"}}));
  EXPECT_EQ(msgs[3]["role"], "tool");
  EXPECT_EQ(exps[0].metrics.at("invalid_actions"), 0.0);
}

TEST(EnvWorkflow, StepWiseOneExperiencePerTurnWithAnchors) {
  Script s;
  s.rewards = {0.25, 0.0, 1.0};
  s.done_after = 3;
  auto m = client();
  for (int i = 0; i < 3; ++i) m.push({strcat("a", i)});
  auto t = task_with({{"step_wise", true}});
  auto exps = run(t, s, m);
  ASSERT_EQ(exps.size(), 3u);
  const auto calls = m.calls();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(exps[i].eid.step, static_cast<int64_t>(i));
    EXPECT_EQ(exps[i].prompt_length, static_cast<int64_t>(calls[i].prompt_ids.size()));
    EXPECT_EQ(exps[i].response_length(), static_cast<int64_t>(calls[i].samples[0].ids.size()));
    EXPECT_EQ(std::vector<uint8_t>(exps[i].action_mask.size(), 1), exps[i].action_mask);
    EXPECT_EQ(json::parse(exps[i].info)["anchor"], strcat("obs ", i));
    EXPECT_EQ(exps[i].reward, 1.0);  // step_reward: episode (reward: last)
  }
  // Turn 2's prompt is the whole conversation so far, rendered.
  EXPECT_NE(m.tokenizer().decode(calls[2].prompt_ids).find("a1<|im_end|>\n<|im_start|>user\nobs 2"), std::string::npos);
  Script s2 = Script{};
  s2.rewards = {0.25, 0.0, 1.0};
  s2.done_after = 3;
  for (int i = 0; i < 3; ++i) m.push({strcat("a", i)});
  t = task_with({{"step_wise", true}, {"step_reward", "env"}});
  exps = run(t, s2, m);
  ASSERT_EQ(exps.size(), 3u);
  EXPECT_EQ(exps[0].reward, 0.25);
  EXPECT_EQ(exps[1].reward, 0.0);
  EXPECT_EQ(exps[2].reward, 1.0);
}

TEST(EnvWorkflow, RewardRules) {
  for (const auto& [rule, want] : std::vector<std::pair<std::string, double>>{
           {"last", 1.0}, {"sum", 1.5}, {"discounted", 0.5 + 0.0 * 0.5 + 1.0 * 0.25}}) {
    Script s;
    s.rewards = {0.5, 0.0, 1.0};
    s.done_after = 3;
    auto m = client();
    m.responder = [](const FakeModelClient::Call&, int64_t) { return FakeReply{"x"}; };
    const auto exps = run(task_with({{"reward", rule}, {"gamma", 0.5}}), s, m);
    EXPECT_DOUBLE_EQ(*exps[0].reward, want) << rule;
  }
}

TEST(EnvWorkflow, MaxStepsEndsAnEpisodeThatNeverFinishes) {
  Script s;
  s.done_after = 0;
  s.rewards = {0, 0, 0, 0};
  auto m = client();
  m.responder = [](const FakeModelClient::Call&, int64_t) { return FakeReply{"x"}; };
  const auto exps = run(task_with({{"max_steps", 4}}), s, m);
  EXPECT_EQ(s.actions.size(), 4u);
  EXPECT_EQ(exps[0].metrics.at("env_done"), 0.0);
  EXPECT_EQ(exps[0].metrics.at("env_steps"), 4.0);
  EXPECT_EQ(s.closes, 1);
}

TEST(EnvWorkflow, TokenBudgetTruncatesWithZeroReward) {
  Script s;
  s.rewards = {1.0, 1.0};
  auto m = client();
  m.responder = [](const FakeModelClient::Call&, int64_t) { return FakeReply{"right right right"}; };
  auto t = task_with(json::object());
  t.rollout_args.max_tokens = 30;  // one 18-token turn fits, its glue does not
  const auto exps = run(t, s, m);
  EXPECT_EQ(exps[0].truncate_status, buffer::TruncateStatus::kResponseTruncated);
  EXPECT_EQ(*exps[0].reward, 0.0);
  EXPECT_EQ(s.closes, 1);
}

TEST(EnvWorkflow, ResetArgsFromWorkflowArgsAndTaskRow) {
  Script s;
  auto m = client();
  m.responder = [](const FakeModelClient::Call&, int64_t) { return FakeReply{"x"}; };
  const auto t = task_with({{"reset_args", {{"size", 10}, {"seed", 1}}}, {"reset_keys", {"seed", "game"}}},
                           {{"seed", 7}, {"game", "g3"}, {"reset_args", {{"level", 2}}}, {"question", "q"}});
  run(t, s, m);
  EXPECT_EQ(json::parse(s.reset_args), (json{{"size", 10}, {"seed", 7}, {"game", "g3"}, {"level", 2}}));
  EXPECT_THROW(make_env_workflow(task_with({{"reset_keys", {"nope"}}}, {{"seed", 1}}), {}, opener_for(s)), ValueError);
}

TEST(EnvWorkflow, EnvFailuresAreCountedByReasonAndCloseTheSession) {
  Script s;
  s.fail_on_step = 2;
  auto m = client();
  m.responder = [](const FakeModelClient::Call&, int64_t) { return FakeReply{"x"}; };
  try {
    run(task_with(json::object()), s, m);
    FAIL() << "expected an env error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[env] closed: step on test://env", 0), 0u) << e.what();
  }
  EXPECT_EQ(s.closes, 1);

  Script p;
  p.fail_on_step = 1;
  p.fail_reason = env::FailReason::kProtocol;
  try {
    run(task_with(json::object()), p, m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[env] protocol: ", 0), 0u) << e.what();
  }
}

TEST(EnvWorkflow, ConnectIsRetriedThenFails) {
  Script s;
  s.connect_failures = 2;
  auto m = client();
  m.responder = [](const FakeModelClient::Call&, int64_t) { return FakeReply{"x"}; };
  const auto exps = run(task_with({{"connect_retries", 2}}), s, m);
  EXPECT_EQ(exps.size(), 1u);
  EXPECT_EQ(s.opens, 1);
  Script f;
  f.connect_failures = 5;
  try {
    run(task_with({{"connect_retries", 1}}), f, m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[env] connect: connect to http://127.0.0.1:1", 0), 0u) << e.what();
  }
  EXPECT_EQ(f.connect_failures, 3);  // two attempts used
}

TEST(EnvWorkflow, CancelStopsBetweenTurns) {
  Script s;
  s.done_after = 0;
  auto m = client();
  m.responder = [&m](const FakeModelClient::Call&, int64_t) {
    m.cancel = true;
    return FakeReply{"x"};
  };
  EXPECT_THROW(run(task_with(json::object()), s, m), CancelledError);
  EXPECT_EQ(s.closes, 1);
}

TEST(EnvWorkflow, ConfigErrorsNameTheKey) {
  Script s;
  auto expect_error = [&](json args, const std::string& needle) {
    buffer::Task t;
    t.workflow_args = args.dump();
    try {
      make_env_workflow(t, {}, opener_for(s));
      FAIL() << needle;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(json::object(), "workflow_args.env_url is required");
  expect_error({{"env_url", "x"}, {"transport", "smoke"}}, "workflow_args.transport must be one of ws, http, agentgym");
  expect_error({{"env_url", "x"}, {"max_step", 3}}, "unknown workflow_args key 'max_step'");
  expect_error({{"env_url", "x"}, {"action_pattern", "(("}}, "workflow_args.action_pattern must be a valid");
  expect_error({{"env_url", "x"}, {"reward", "best"}}, "workflow_args.reward must be one of last, sum, discounted");
  // An observation field the template names but the observation lacks fails the run with the fields.
  auto m = client();
  try {
    run(task_with({{"observation_template", "{colour}"}}), s, m);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("observation field (pos, text)"), std::string::npos) << e.what();
  }
}

TEST(EnvWorkflow, RegisteredByName) {
  EXPECT_TRUE(has_workflow("env_workflow"));
}

}  // namespace
}  // namespace trinity::workflow
