// Trinity's async_* alias names, math_eval_workflow and the on-policy distillation workflows against
// scripted FakeModelClients: an alias runs exactly as its target; math_eval's fixed Qwen2.5-Math
// prompt and sampling; the teacher's logprobs land in Experience::teacher_logprobs with the
// response slice, the kl_divergence metric, the math variant's accuracy reward, and the errors for
// a missing teacher, a logprob length mismatch and a row without a question.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "buffer/experience.h"
#include "core/error.h"
#include "workflow/fake_client.h"
#include "workflow/workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;
using testing::FakeModelClient;
using testing::FakeReply;

FakeModelClient byte_client() {
  return FakeModelClient(testing::byte_tokenizer(), {258});
}

// A teacher whose logprob for position i is -(0.5 + 0.01 i) (or a list of the wrong length when
// `short_by` > 0); records every request.
class TeacherClient : public FakeModelClient {
 public:
  TeacherClient() : FakeModelClient(testing::byte_tokenizer(), {258}) {}
  std::vector<float> logprobs(const std::vector<int32_t>& tokens, double temperature) override {
    std::lock_guard<std::mutex> l(mu);
    seen.push_back(tokens);
    temps.push_back(temperature);
    std::vector<float> out;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) out.push_back(-(0.5f + 0.01f * static_cast<float>(i)));
    out.resize(out.size() - std::min(out.size(), short_by));
    return out;
  }
  static float expected(size_t i) { return -(0.5f + 0.01f * static_cast<float>(i)); }
  std::mutex mu;
  std::vector<std::vector<int32_t>> seen;
  std::vector<double> temps;
  size_t short_by = 0;
};

// ---- aliases ----

FakeReply policy_reply(const FakeModelClient::Call&, int64_t i) {
  return {i % 2 == 0 ? "<think>2+2</think> <answer>4</answer> so \\boxed{4}"
                     : "<think>hm</think> <answer>5</answer> \\boxed{5}"};
}
FakeReply judge_reply(const FakeModelClient::Call&, int64_t) {
  return {"```json\n{\"rating\": 7}\n```\n[0.5, 0.25]"};
}

std::vector<buffer::Experience> run_named(const std::string& name, const buffer::Task& t, bool* can_repeat) {
  FakeModelClient policy = byte_client(), judge = byte_client();
  policy.responder = policy_reply;
  judge.responder = judge_reply;
  auto wf = make_workflow(name, t);
  *can_repeat = wf->can_repeat();
  RunContext ctx;
  ctx.task = &t;
  ctx.model = &policy;
  ctx.auxiliary_models = {&judge};
  ctx.repeat_times = *can_repeat ? 2 : 1;
  return wf->run(ctx);
}

TEST(WorkflowAliases, EachAliasRunsAsItsTarget) {
  const auto names = workflow_names();
  ASSERT_EQ(workflow_aliases().size(), 6u);
  for (const auto& [alias, target] : workflow_aliases()) {
    EXPECT_NE(std::find(names.begin(), names.end(), alias), names.end()) << alias;
    buffer::Task t;
    t.task_desc = "What is 2+2?";
    t.truth = "4";
    t.raw = json{{"question", t.task_desc}, {"answer", t.truth}}.dump();
    if (target == "simple_workflow") t.reward_fn = "math_reward";
    bool rep_a = false, rep_t = true;
    const auto a = run_named(alias, t, &rep_a);
    const auto b = run_named(target, t, &rep_t);
    EXPECT_EQ(rep_a, rep_t) << alias;
    ASSERT_EQ(a.size(), b.size()) << alias;
    ASSERT_FALSE(a.empty()) << alias;
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(buffer::experience_to_json(a[i]), buffer::experience_to_json(b[i])) << alias << " run " << i;
  }
  // Different targets behave differently, so the comparison above can fail.
  buffer::Task t;
  t.task_desc = "What is 2+2?";
  t.truth = "4";
  bool rep = false;
  EXPECT_NE(buffer::experience_to_json(run_named("async_math_workflow", t, &rep)[0]),
            buffer::experience_to_json(run_named("math_boxed_workflow", t, &rep)[0]));
}

// ---- math_eval_workflow ----

const char* const kQwenSystem = "You are a helpful assistant.";
const char* const kQwenSuffix = "\nPlease reason step by step, and put your final answer within \\boxed{}.";

// upstream tests/explorer/workflow_test.py::test_math_eval_workflow, with real "\boxed".
TEST(MathEvalWorkflow, QwenPromptFixedSamplingAndAccuracy) {
  struct Case {
    const char* reply;
    double accuracy;
  };
  const Case cases[] = {{"My step-by-step reasoning leads to the answer \\boxed{36}", 1.0},
                        {"Here is the answer of \\boxed{36.0}", 1.0},
                        {"I made a mistake, the answer is \\boxed{42}", 0.0},
                        {"The answer is 36, but I forgot the box.", 0.0}};
  for (const char* name : {"math_eval_workflow", "async_math_eval_workflow"}) {
    buffer::Task t;
    t.raw = R"({"question": "What is 6*6?", "answer": "36"})";
    t.task_desc = "ignored";
    t.truth = "36";
    t.system_prompt = "ignored too";
    t.rollout_args.temperature = 1.3;
    t.rollout_args.max_tokens = 77;
    for (size_t i = 0; i < std::size(cases); ++i) {
      FakeModelClient m = byte_client();
      m.push({cases[i].reply});
      auto wf = make_workflow(name, t);
      EXPECT_FALSE(wf->can_repeat());
      RunContext ctx;
      ctx.model = &m;
      ctx.run_id_base = static_cast<int64_t>(i);
      const auto exps = wf->run(ctx);
      ASSERT_EQ(exps.size(), 1u);
      EXPECT_EQ(exps[0].metrics.at("accuracy"), cases[i].accuracy) << cases[i].reply;
      EXPECT_EQ(*exps[0].reward, 0.0);  // upstream sets no reward; the accuracy is a metric
      EXPECT_EQ(exps[0].eid.run, static_cast<int64_t>(i));
      const auto calls = m.calls();
      ASSERT_EQ(calls.size(), 1u);
      const json msgs = json::parse(calls[0].messages_json);
      ASSERT_EQ(msgs.size(), 2u);
      EXPECT_EQ(msgs[0]["content"], kQwenSystem);
      EXPECT_EQ(msgs[1]["content"], std::string("What is 6*6?") + kQwenSuffix);
      EXPECT_EQ(calls[0].opt.temperature, 0.6);
      EXPECT_EQ(calls[0].opt.top_p, 0.8);
      EXPECT_EQ(calls[0].opt.top_k, -1);
      EXPECT_EQ(calls[0].opt.n, 1);
      EXPECT_FALSE(calls[0].opt.max_tokens.has_value());  // the model default, not rollout_args
    }
  }
}

TEST(MathEvalWorkflow, RowWithoutQuestionOrTruth) {
  buffer::Task t;
  t.raw = R"({"problem": "What is 6*6?"})";
  try {
    make_workflow("math_eval_workflow", t);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'question'"), std::string::npos) << e.what();
  }
  t.raw = R"({"question": 36})";
  EXPECT_THROW(make_workflow("math_eval_workflow", t), ValueError);
  t.raw = R"({"question": "q"})";  // no truth: no accuracy metric (upstream skips it)
  FakeModelClient m = byte_client();
  m.push({"\\boxed{1}"});
  RunContext ctx;
  ctx.model = &m;
  const auto exps = make_workflow("math_eval_workflow", t)->run(ctx);
  ASSERT_EQ(exps.size(), 1u);
  EXPECT_EQ(exps[0].metrics.count("accuracy"), 0u);
}

// ---- on_policy_distill_workflow / on_policy_distill_math_workflow ----

buffer::Task distill_task(const std::string& name) {
  buffer::Task t;
  t.workflow = name;
  t.task_desc = "Natalia sold 48 clips. How many?";
  t.truth = "She sold 48/2 = 24 in May.\n#### 72";
  t.system_prompt = "Be brief.";
  t.rollout_args.temperature = 0.9;
  return t;
}

TEST(OnPolicyDistill, TeacherLogprobsSliceAndKl) {
  const buffer::Task t = distill_task("on_policy_distill_workflow");
  FakeModelClient student = byte_client();
  TeacherClient teacher;
  student.push({"It is \\boxed{72}."});
  student.push({"72"});
  auto wf = make_workflow("on_policy_distill_workflow", t);
  EXPECT_TRUE(wf->can_repeat());
  RunContext ctx;
  ctx.model = &student;
  ctx.auxiliary_models = {&teacher};
  ctx.repeat_times = 2;
  ctx.run_id_base = 10;
  const auto exps = wf->run(ctx);
  ASSERT_EQ(exps.size(), 2u);
  const auto calls = student.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].opt.n, 2);
  EXPECT_EQ(calls[0].opt.temperature, 0.9);
  const json msgs = json::parse(calls[0].messages_json);
  EXPECT_EQ(msgs[0]["content"], "Be brief.");
  EXPECT_EQ(msgs[1]["content"], t.task_desc);
  ASSERT_EQ(teacher.seen.size(), 2u);
  for (size_t k = 0; k < exps.size(); ++k) {
    const auto& e = exps[k];
    EXPECT_EQ(e.eid.run, 10 + static_cast<int64_t>(k));
    EXPECT_EQ(*e.reward, 0.0);
    EXPECT_EQ(e.metrics.count("accuracy"), 0u);
    const size_t P = static_cast<size_t>(e.prompt_length), L = e.tokens.size();
    ASSERT_EQ(e.teacher_logprobs.size(), L - P);
    ASSERT_EQ(e.teacher_logprobs.size(), e.logprobs.size());
    double kl = 0.0;
    for (size_t i = 0; i < e.teacher_logprobs.size(); ++i) {
      EXPECT_EQ(e.teacher_logprobs[i], TeacherClient::expected(P - 1 + i)) << i;  // logprob of tokens[P + i]
      kl += static_cast<double>(e.logprobs[i]) - static_cast<double>(e.teacher_logprobs[i]);
    }
    EXPECT_NEAR(e.metrics.at("kl_divergence"), kl, 1e-9);
    EXPECT_GT(e.metrics.at("kl_divergence"), 0.0);  // fake student logprobs are near 0, the teacher's <= -0.5
  }
  // The teacher scored the exact student sequences, at the default temperature 1.0.
  std::vector<std::vector<int32_t>> want = {exps[0].tokens, exps[1].tokens};
  std::sort(want.begin(), want.end());
  std::sort(teacher.seen.begin(), teacher.seen.end());
  EXPECT_EQ(teacher.seen, want);
  EXPECT_EQ(teacher.temps, std::vector<double>(2, 1.0));
}

TEST(OnPolicyDistill, MathVariantPromptAndAccuracyReward) {
  buffer::Task t = distill_task("on_policy_distill_math_workflow");
  t.workflow_args = R"({"temperature": 0.5})";
  FakeModelClient student = byte_client();
  TeacherClient teacher;
  student.push({"48 + 24 = 72, so \\boxed{72}"});
  student.push({"\\boxed{71}"});
  RunContext ctx;
  ctx.model = &student;
  ctx.auxiliary_models = {&teacher};
  ctx.repeat_times = 2;
  const auto exps = make_workflow(t.workflow, t)->run(ctx);
  ASSERT_EQ(exps.size(), 2u);
  EXPECT_EQ(*exps[0].reward, 1.0);
  EXPECT_EQ(exps[0].metrics.at("accuracy"), 1.0);
  EXPECT_EQ(*exps[1].reward, 0.0);
  EXPECT_EQ(exps[1].metrics.at("accuracy"), 0.0);
  EXPECT_TRUE(exps[1].metrics.count("kl_divergence"));
  const json msgs = json::parse(student.calls()[0].messages_json);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0]["content"], kQwenSystem);  // the task's system prompt is not used
  EXPECT_EQ(msgs[1]["content"], t.task_desc + kQwenSuffix);
  EXPECT_EQ(teacher.temps, std::vector<double>(2, 0.5));
}

TEST(OnPolicyDistill, Errors) {
  const buffer::Task t = distill_task("on_policy_distill_workflow");
  FakeModelClient student = byte_client();
  RunContext ctx;
  ctx.model = &student;
  try {
    make_workflow(t.workflow, t)->run(ctx);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("explorer.auxiliary_models"), std::string::npos) << e.what();
  }
  TeacherClient teacher;
  teacher.short_by = 1;
  ctx.auxiliary_models = {&teacher};
  try {
    make_workflow(t.workflow, t)->run(ctx);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("teacher logprobs do not match"), std::string::npos) << e.what();
  }
  buffer::Task bad = t;
  bad.workflow_args = R"({"temprature": 0.5})";
  EXPECT_THROW(make_workflow(bad.workflow, bad), ConfigError);
  bad.workflow_args = R"({"temperature": 0})";
  EXPECT_THROW(make_workflow(bad.workflow, bad), ConfigError);
}

}  // namespace
}  // namespace trinity::workflow
