// Judge workflows against scripted policy and judge clients (fake_client.h): rubric_judge_workflow,
// math_ruler_workflow, math_trainable_ruler_workflow, math_rm_workflow, rubric_judge_openai_workflow
// (configuration, and a one-shot loopback HTTP server as the endpoint). The judge prompts are compared with upstream's
// templates written out here by hand; rating and score-list parsing on good, bad and edge judgements; rewards, metrics,
// the info["judge"] record; unparsable ratings fail the run with a "[judge] <reason>:" error (the explorer's failure
// class) unless judge_failure = "zero"; RULER's length mismatch gives zeros; trainable RULER's gold
// path (seeded rng) adds "-ruler" judge experiences rewarded 1 - MAE against the scaled gold.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/rng.h"
#include "workflow/fake_client.h"
#include "workflow/judge.h"
#include "workflow/math_rm.h"
#include "workflow/openai_judge.h"
#include "workflow/rewards/reward_fn.h"
#include "workflow/rubric_judge.h"
#include "workflow/ruler.h"
#include "workflow/workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;
using testing::FakeModelClient;
using testing::FakeReply;

FakeModelClient byte_client() {
  return FakeModelClient(testing::byte_tokenizer(), {258});
}

// Upstream's templates (rubric_judge_workflow.py, math_ruler_workflow.py), copied as text.
const char* kUpstreamRubricSystem =
    "You are an expert evaluator. Given a user prompt, a generated response, and a list of quality rubrics, please "
    "rate the overall quality of the response on a scale of 1 to 10 based on how well it satisfies the rubrics.\n"
    "Consider all rubrics holistically when determining your score. A response that violates multiple rubrics should "
    "receive a lower score, while a response that satisfies all rubrics should receive a higher score.\n"
    "Start your response with a valid JSON object that starts with \"```json\" and ends with \"```\". The JSON object "
    "should contain\na single key \"rating\" and the value should be an integer between 1 and 10.\n"
    "Example response:\n```json\n{\n\"rating\": 7\n}```";

std::string upstream_rubric_user(const std::string& q, const std::string& resp, const std::string& rubrics) {
  return "Given the following prompt, response, and rubrics, please rate the overall quality of the response on a "
         "scale of 1 to 10 based\non how well it satisfies the rubrics.\n<prompt>\n" +
         q + "\n</prompt>\n<response>\n" + resp + "\n</response>\n<rubrics>\n" + rubrics +
         "\n</rubrics>\nYour JSON Evaluation:";
}

const char* kFormatReq =
    "Solution format requirement: first thinks about the reasoning process in the mind and then provides the final "
    "answer. The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags, "
    "respectively, i.e.,\n<think> reasoning process here </think>\n<answer> answer here </answer>.";
const char* kPleaseAssign =
    "Please assign a score within the range [0, 1] for each of them, reflecting how well they solve the question.\n"
    "You may compare them against each other and think step by step before returning your final scores, but keep "
    "your reasoning process brief and concise when possible.";

buffer::Task rubric_task(const json& rubric) {
  buffer::Task t;
  t.workflow = "rubric_judge_workflow";
  t.task_desc = "Explain photosynthesis.";
  t.raw = json{{"question", t.task_desc}, {"rubric", rubric}}.dump();
  t.repeat_times = 2;
  return t;
}

buffer::Task math_task(const std::string& wf) {
  buffer::Task t;
  t.workflow = wf;
  t.task_desc = "What is 2+2?";
  t.truth = "4";
  t.raw = json{{"question", t.task_desc}, {"answer", "4"}}.dump();
  return t;
}

RunContext context(const buffer::Task& t, ModelClient* policy, std::vector<ModelClient*> aux, int64_t n,
                   Rng* rng = nullptr) {
  RunContext ctx;
  ctx.task = &t;
  ctx.model = policy;
  ctx.auxiliary_models = std::move(aux);
  ctx.repeat_times = n;
  ctx.rng = rng;
  return ctx;
}

// The messages of a judge call as (system, user).
std::pair<std::string, std::string> sys_user(const FakeModelClient::Call& c) {
  const json m = json::parse(c.messages_json);
  EXPECT_EQ(m.size(), 2u);
  return {m[0]["content"].get<std::string>(), m[1]["content"].get<std::string>()};
}

std::string judge_user(const FakeModelClient::Call& c) {
  return sys_user(c).second;
}

json info_of(const buffer::Experience& e) {
  return json::parse(e.info);
}

// ---- parsing ----

TEST(JudgeParse, RatingFormats) {
  struct Case {
    const char* text;
    double want;
  } good[] = {
      {"```json\n{\n\"rating\": 7\n}```", 7},
      {"Sure.\n```\n{\"rating\": 8}\n```\nDone", 8},
      {"My evaluation: {\"reason\": \"a {brace} in a string\", \"rating\": 9} end", 9},
      {"Rating: 6/10", 6},
      {"**Rating**: 5.", 5},
      {"rating = 7.5", 7.5},
      {"```json\n{rating: 3}\n```\nSo the final \"rating\": 4", 4},  // broken block, prose fallback
      {"{\"other\": 1}\n{\"rating\": 10}", 10},
  };
  for (const auto& c : good) {
    const ParsedRating r = parse_rating(c.text, 1, 10);
    ASSERT_TRUE(r.rating.has_value()) << c.text << " -> " << r.reason << ": " << r.detail;
    EXPECT_DOUBLE_EQ(*r.rating, c.want) << c.text;
  }
  struct Bad {
    const char* text;
    const char* reason;
  } bad[] = {
      {"```json\n{\"rating\": 11}\n```", "out_of_range"},
      {"{\"rating\": 0}", "out_of_range"},
      {"```json\n{\"rating\": \"seven\"}\n```", "unparsable"},
      {"I would give it a seven.", "unparsable"},
      {"", "unparsable"},
      {"rating: nan", "unparsable"},
  };
  for (const auto& c : bad) {
    const ParsedRating r = parse_rating(c.text, 1, 10);
    EXPECT_FALSE(r.rating.has_value()) << c.text;
    EXPECT_EQ(r.reason, c.reason) << c.text << ": " << r.detail;
    EXPECT_FALSE(r.detail.empty());
  }
}

TEST(JudgeParse, ScoreList) {
  auto ok = [](const char* t, size_t n) {
    const ParsedScores p = parse_score_list(t, n);
    EXPECT_TRUE(p.scores.has_value()) << t << " -> " << p.reason << ": " << p.detail;
    return p.scores.value_or(std::vector<double>{});
  };
  EXPECT_EQ(ok("Thinking... [0.2, 1.3, -0.5]", 3), (std::vector<double>{0.2, 1.0, 0.0}));  // clipped
  EXPECT_EQ(ok("[1, 0.5,]", 2), (std::vector<double>{1.0, 0.5}));
  EXPECT_EQ(ok("first [9, 9] then final: [ 0.1 ,0.2 ]\n", 2), (std::vector<double>{0.1, 0.2}));  // the last list
  EXPECT_EQ(ok("[1]", 1), (std::vector<double>{1.0}));
  struct Bad {
    const char* text;
    size_t n;
    const char* reason;
  } bad[] = {
      {"[0.1, 0.2]", 3, "length_mismatch"}, {"[0.1, 0.2, 0.3, 0.4]", 3, "length_mismatch"},
      {"[]", 2, "length_mismatch"},         {"no list here", 2, "unparsable"},
      {"[0.5, abc]", 2, "unparsable"},      {"scores] then [", 1, "unparsable"},
      {"[nan, 1]", 2, "unparsable"},        {"[0.5,, 1]", 3, "unparsable"},
  };
  for (const auto& c : bad) {
    const ParsedScores p = parse_score_list(c.text, c.n);
    EXPECT_FALSE(p.scores.has_value()) << c.text;
    EXPECT_EQ(p.reason, c.reason) << c.text << ": " << p.detail;
  }
}

TEST(JudgeWorkflows, Registered) {
  for (const char* n : {"rubric_judge_workflow", "rubric_judge_openai_workflow", "math_ruler_workflow",
                        "math_trainable_ruler_workflow", "math_rm_workflow"})
    EXPECT_TRUE(has_workflow(n)) << n;
}

// ---- rubric_judge_workflow ----

TEST(RubricJudge, UpstreamPromptsRewardsAndRecord) {
  const json rubric = json::array({{{"weight", 5}, {"description", "Mentions chlorophyll"}},
                                   {{"weight", 0.5}, {"description", "Concise"}},
                                   {{"weight", "high"}, {"description", "No errors"}}});
  const buffer::Task t = rubric_task(rubric);
  FakeModelClient policy = byte_client(), judge = byte_client();
  policy.push({"Plants use light."});
  policy.push({"Chlorophyll absorbs light."});
  judge.responder = [](const FakeModelClient::Call& c, int64_t) -> FakeReply {
    return {c.messages_json.find("Chlorophyll absorbs") != std::string::npos ? "```json\n{\n\"rating\": 9\n}```"
                                                                             : "Rating: 4"};
  };
  RunContext ctx = context(t, &policy, {&judge}, 2);
  auto wf = make_workflow("rubric_judge_workflow", t);
  ASSERT_TRUE(wf->can_repeat());
  const auto exps = wf->run(ctx);
  ASSERT_EQ(exps.size(), 2u);

  // The policy: one chat request, n = 2, upstream's default system prompt.
  ASSERT_EQ(policy.calls().size(), 1u);
  EXPECT_EQ(policy.calls()[0].opt.n, 2);
  const json pm = json::parse(policy.calls()[0].messages_json);
  EXPECT_EQ(pm[0]["content"],
            "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The "
            "assistant first thinks about the reasoning process in the mind and then provides the user with the "
            "answer.\n    ");
  EXPECT_EQ(pm[1]["content"], t.task_desc);

  // The judge: one call per response, temperature 0, upstream's prompts verbatim.
  const auto calls = judge.calls();
  ASSERT_EQ(calls.size(), 2u);
  const std::string rubrics =
      "Rubric 0 (weight: 5): Mentions chlorophyll\nRubric 1 (weight: 0.5): Concise\nRubric 2 (weight: high): No errors";
  std::set<std::string> users;
  for (const auto& c : calls) {
    EXPECT_EQ(c.opt.temperature.value_or(-1.0), 0.0);
    EXPECT_EQ(c.opt.n, 1);
    const auto [sys, user] = sys_user(c);
    EXPECT_EQ(sys, kUpstreamRubricSystem);
    users.insert(user);
  }
  EXPECT_EQ(users, (std::set<std::string>{upstream_rubric_user(t.task_desc, "Plants use light.", rubrics),
                                          upstream_rubric_user(t.task_desc, "Chlorophyll absorbs light.", rubrics)}));

  EXPECT_NEAR(*exps[0].reward, 0.4, 1e-12);
  EXPECT_NEAR(*exps[1].reward, 0.9, 1e-12);
  EXPECT_EQ(exps[0].eid.run, 0);
  EXPECT_EQ(exps[1].eid.run, 1);
  EXPECT_NEAR(exps[1].metrics.at("judge_score"), 0.9, 1e-12);
  EXPECT_EQ(exps[0].metrics.at("judge_success"), 1.0);
  const json rec = info_of(exps[1])["judge"];
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0]["judge"], "auxiliary_models[0]");
  EXPECT_EQ(rec[0]["raw"], "```json\n{\n\"rating\": 9\n}```");
  EXPECT_NEAR(rec[0]["score"].get<double>(), 0.9, 1e-12);
  EXPECT_EQ(rec[0]["prompt"][1]["content"], upstream_rubric_user(t.task_desc, "Chlorophyll absorbs light.", rubrics));
  EXPECT_EQ(info_of(exps[1])["finish_reason"], "stop");
}

TEST(RubricJudge, UnparsableFailsTheRunUnlessZero) {
  buffer::Task t = rubric_task(json::array());
  FakeModelClient policy = byte_client(), judge = byte_client();
  policy.responder = [](const FakeModelClient::Call&, int64_t i) -> FakeReply { return {i ? "B" : "A"}; };
  judge.responder = [](const FakeModelClient::Call& c, int64_t) -> FakeReply {
    return {c.messages_json.find("<response>\\nB\\n") != std::string::npos ? "I like it a lot." : "{\"rating\": 8}"};
  };
  {
    RunContext ctx = context(t, &policy, {&judge}, 2);
    try {
      make_workflow("rubric_judge_workflow", t)->run(ctx);
      FAIL() << "no error";
    } catch (const JudgeError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("[judge] unparsable: rubric_judge_workflow run 1: no \"rating\" found", 0), 0u) << m;
    }
    EXPECT_NE(judge_user(judge.calls()[0]).find("<rubrics>\nRubrics are not provided.\n</rubrics>"), std::string::npos);
  }
  t.workflow_args = R"({"judge_failure": "zero"})";
  RunContext ctx = context(t, &policy, {&judge}, 2);
  const auto exps = make_workflow("rubric_judge_workflow", t)->run(ctx);
  ASSERT_EQ(exps.size(), 2u);
  EXPECT_NEAR(*exps[0].reward, 0.8, 1e-12);
  EXPECT_EQ(*exps[1].reward, 0.0);
  EXPECT_EQ(exps[1].metrics.at("judge_success"), 0.5);
  const json rec = info_of(exps[1])["judge"][0];
  EXPECT_TRUE(rec["score"].is_null());
  EXPECT_EQ(rec["raw"], "I like it a lot.");
  EXPECT_EQ(rec["error"].get<std::string>().rfind("unparsable: ", 0), 0u);

  t.workflow_args = R"({"judge_failure": "ignore"})";
  EXPECT_THROW(make_workflow("rubric_judge_workflow", t), ConfigError);
  t.workflow_args = R"({"judge_falure": "zero"})";
  EXPECT_THROW(make_workflow("rubric_judge_workflow", t), ConfigError);
}

TEST(RubricJudge, OutOfRangeAndNoJudgeAreFailureClasses) {
  const buffer::Task t = rubric_task(json::array({{{"weight", 1}, {"description", "d"}}}));
  FakeModelClient policy = byte_client(), judge = byte_client();
  judge.responder = [](const FakeModelClient::Call&, int64_t) -> FakeReply {
    return {"```json\n{\"rating\": 42}\n```"};
  };
  RunContext ctx = context(t, &policy, {&judge}, 1);
  try {
    make_workflow("rubric_judge_workflow", t)->run(ctx);
    FAIL();
  } catch (const JudgeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[judge] out_of_range: ", 0), 0u) << e.what();
  }
  RunContext none = context(t, &policy, {}, 1);
  try {
    make_workflow("rubric_judge_workflow", t)->run(none);
    FAIL();
  } catch (const JudgeError& e) {
    EXPECT_NE(std::string(e.what()).find("[judge] no_judge: rubric_judge_workflow"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("explorer.auxiliary_models"), std::string::npos);
  }
}

TEST(RubricJudge, RubricListErrors) {
  EXPECT_EQ(rubric_list_text(R"({"rubric": "[{\"weight\": 2, \"description\": \"x\"}]"})", "w"),
            "Rubric 0 (weight: 2): x");
  EXPECT_EQ(rubric_list_text("{}", "w"), "Rubrics are not provided.");
  try {
    rubric_list_text(R"({"rubric": [{"weight": 1, "description": "a"}, {"description": "b"}]})",
                     "rubric_judge_workflow");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("rubric[1] needs 'weight' and 'description'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rubric_list_text(R"({"rubric": 3})", "w"), ConfigError);
  EXPECT_THROW(make_workflow("rubric_judge_workflow", rubric_task(json::array({1, 2}))), ConfigError);
}

// ---- math_ruler_workflow ----

std::string upstream_ruler_user(const std::string& q, const std::vector<std::string>& cands, bool trainable) {
  const std::string sep = trainable ? "\n" : "\n\n";
  std::string sol;
  for (size_t i = 0; i < cands.size(); ++i)
    sol += (i ? "\n\n" : "") + std::string("Candidate solution ") + std::to_string(i + 1) + ": " + cands[i];
  return "\nBelow is a question and several candidate solutions." + sep + "Question: " + q + "\n\n" + kFormatReq + sep +
         sol + sep + kPleaseAssign + sep +
         "Conclude your response with a list of scores, in the following format: [score for solution 1, score for "
         "solution 2, ..., score for solution " +
         std::to_string(cands.size()) + "]\n";
}

const std::vector<std::string> kCands = {"<think>2+2</think> <answer>4</answer>",
                                         "<think>hm</think> <answer>5</answer>", "4"};

TEST(MathRuler, OneJudgeCallOverAllCandidates) {
  const buffer::Task t = math_task("math_ruler_workflow");
  FakeModelClient policy = byte_client(), judge = byte_client();
  for (const auto& c : kCands) policy.push({c});
  judge.push({"Solution 1 is right, 2 is wrong, 3 has no format.\n[0.9, 0.1, 1.7]"});
  RunContext ctx = context(t, &policy, {&judge}, 3);
  const auto exps = make_workflow("math_ruler_workflow", t)->run(ctx);
  ASSERT_EQ(exps.size(), 3u);
  // Policy: upstream's deepseek_like system prompt (math_reward is the default gold reward).
  EXPECT_EQ(json::parse(policy.calls()[0].messages_json)[0]["content"].get<std::string>().rfind(
                "A conversation between User and Assistant.", 0),
            0u);
  ASSERT_EQ(judge.calls().size(), 1u);
  const auto [sys, user] = sys_user(judge.calls()[0]);
  EXPECT_EQ(sys,
            "You are a fair judge. The user will provide a question and 3 candidate solutions to it. Your task is to "
            "compare the solutions, see how well they resolve the question, and assign a score within the range [0, "
            "1] for each solution.");
  EXPECT_EQ(user, upstream_ruler_user(t.task_desc, kCands, false));
  EXPECT_FALSE(judge.calls()[0].opt.temperature.has_value());  // the judge's own sampling defaults

  const RewardFn gold = make_reward_fn("math_reward");
  const std::vector<double> want = {0.9, 0.1, 1.0};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(*exps[i].reward, want[i]) << i;
    EXPECT_EQ(exps[i].metrics.at("judge_success"), 1.0);
    const double g = sum_components(gold(RewardInput{kCands[i], "4", 0}));
    EXPECT_DOUBLE_EQ(exps[i].metrics.at("gold_reward"), g) << i;  // logged, not the reward
    EXPECT_TRUE(exps[i].metrics.count("accuracy"));
    const json rec = info_of(exps[i])["judge"][0];
    EXPECT_EQ(rec["scores"], json(want));
    EXPECT_DOUBLE_EQ(rec["score"].get<double>(), want[i]);
  }
  EXPECT_NEAR(exps[0].metrics.at("gold_reward"), 1.1, 1e-12);
  EXPECT_NEAR(exps[1].metrics.at("gold_reward"), 0.1, 1e-12);  // wrong answer, good format
}

TEST(MathRuler, LengthMismatchOrNoListGivesZeros) {
  const buffer::Task t = math_task("math_ruler_workflow");
  for (const char* reply : {"[0.5, 0.5]", "all good"}) {
    FakeModelClient policy = byte_client(), judge = byte_client();
    for (const auto& c : kCands) policy.push({c});
    judge.push({reply});
    RunContext ctx = context(t, &policy, {&judge}, 3);
    const auto exps = make_workflow("math_ruler_workflow", t)->run(ctx);
    ASSERT_EQ(exps.size(), 3u) << reply;
    for (const auto& e : exps) {
      EXPECT_EQ(*e.reward, 0.0) << reply;
      EXPECT_EQ(e.metrics.at("judge_success"), 0.0);
      EXPECT_TRUE(e.metrics.count("gold_reward"));
      const json rec = info_of(e)["judge"][0];
      EXPECT_TRUE(rec["score"].is_null());
      EXPECT_EQ(rec["raw"], reply);
    }
    const std::string err = info_of(exps[0])["judge"][0]["error"];
    EXPECT_EQ(err.rfind(std::string(reply)[0] == '[' ? "length_mismatch: the judge scored 2 solutions, expected 3"
                                                     : "unparsable: ",
                        0),
              0u)
        << err;
  }
}

// ---- math_trainable_ruler_workflow ----

// A seed whose first uniform draw is (or is not) below the ground-truth probability.
uint64_t seed_where(bool gold) {
  for (uint64_t s = 1;; ++s) {
    Rng r(s);
    if ((r.uniform() < kRulerGroundTruthProbability) == gold) return s;
  }
}

TEST(MathTrainableRuler, GoldPathAddsJudgeExperiences) {
  const buffer::Task t = math_task("math_trainable_ruler_workflow");
  FakeModelClient policy = byte_client();
  const std::vector<std::string> judgements = {"[1.0, 0.0, 0.0]", "[0.5, 0.5, 0.5]", "no idea"};
  policy.responder = [&](const FakeModelClient::Call& c, int64_t i) -> FakeReply {
    const bool judging = c.messages_json.find("You are a fair judge.") != std::string::npos;
    return {judging ? judgements[static_cast<size_t>(i)] : kCands[static_cast<size_t>(i)]};
  };
  Rng rng(seed_where(true));
  RunContext ctx = context(t, &policy, {}, 3, &rng);
  ctx.run_id_base = 6;
  const auto exps = make_workflow("math_trainable_ruler_workflow", t)->run(ctx);
  ASSERT_EQ(exps.size(), 6u);

  const auto calls = policy.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].opt.n, 3);  // n = repeat_times judge samples
  EXPECT_EQ(sys_user(calls[1]).second, upstream_ruler_user(t.task_desc, kCands, true));

  const RewardFn gold = make_reward_fn("math_reward");
  std::vector<double> g(3), scaled(3);
  for (size_t i = 0; i < 3; ++i) {
    g[i] = sum_components(gold(RewardInput{kCands[i], "4", 0}));
    scaled[i] = (g[i] + 0.1) / 1.2;
  }
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(*exps[i].reward, g[i]) << "policy gets the gold reward";
    EXPECT_EQ(exps[i].eid.run, 6 + static_cast<int64_t>(i));
    EXPECT_EQ(exps[i].eid.batch, "0");
    EXPECT_NEAR(exps[i].metrics.at("judge_success"), 2.0 / 3.0, 1e-12);
    EXPECT_EQ(exps[i].metrics.at("gold_available"), 1.0);
    EXPECT_EQ(info_of(exps[i])["judge"].size(), 3u);  // every judge sample logged
  }
  // Judge experiences: their own group, reward 1 - MAE(scores, scaled gold); unparsable -> 0.
  auto mae = [&](const std::vector<double>& s) {
    double m = 0;
    for (size_t i = 0; i < 3; ++i) m += std::fabs(s[i] - scaled[i]);
    return m / 3;
  };
  const std::vector<double> want = {1.0 - mae({1, 0, 0}), 1.0 - mae({0.5, 0.5, 0.5}), 0.0};
  for (size_t k = 0; k < 3; ++k) {
    const buffer::Experience& e = exps[3 + k];
    EXPECT_EQ(e.eid.batch, kRulerGroupTag);
    EXPECT_EQ(e.eid.run, 6 + static_cast<int64_t>(k));
    EXPECT_NEAR(*e.reward, want[k], 1e-12) << k;
    EXPECT_NEAR(e.metrics.at("reward_for_judger"), want[k], 1e-12);
    EXPECT_EQ(e.response_text, judgements[k]);
    EXPECT_EQ(json::parse(e.messages).back()["content"], judgements[k]);
    const json info = info_of(e);
    EXPECT_EQ(info["judge"][0]["judge"], "policy");
    EXPECT_EQ(info["gold_scores_scaled"].size(), 3u);
  }
  EXPECT_GT(want[0], 0.5);  // the first judge agrees with the gold ranking best
  EXPECT_GT(want[0], want[1]);
}

TEST(MathTrainableRuler, WithoutGoldThePolicyIsRewardedByItsJudgement) {
  const buffer::Task t = math_task("math_trainable_ruler_workflow");
  for (const auto& [text, parses] :
       std::vector<std::pair<std::string, bool>>{{"[0.25, 0.75, 0.5]", true}, {"[0.25]", false}}) {
    const std::string judgement = text;
    const bool ok = parses;
    FakeModelClient policy = byte_client();
    policy.responder = [&](const FakeModelClient::Call& c, int64_t i) -> FakeReply {
      const bool judging = c.messages_json.find("You are a fair judge.") != std::string::npos;
      return {judging ? judgement : kCands[static_cast<size_t>(i)]};
    };
    Rng rng(seed_where(false));
    RunContext ctx = context(t, &policy, {}, 3, &rng);
    const auto exps = make_workflow("math_trainable_ruler_workflow", t)->run(ctx);
    ASSERT_EQ(exps.size(), 3u) << "no judge experiences without ground truth";
    ASSERT_EQ(policy.calls().size(), 2u);
    EXPECT_EQ(policy.calls()[1].opt.n, 1);
    const std::vector<double> want = ok ? std::vector<double>{0.25, 0.75, 0.5} : std::vector<double>{0, 0, 0};
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_DOUBLE_EQ(*exps[i].reward, want[i]) << judgement;
      EXPECT_EQ(exps[i].metrics.at("judge_success"), ok ? 1.0 : 0.0);
      EXPECT_EQ(exps[i].metrics.at("gold_available"), 0.0);
      EXPECT_EQ(exps[i].eid.batch, "0");
    }
  }
}

// ---- math_rm_workflow ----

TEST(MathRm, GenerativeRewardModel) {
  buffer::Task t = math_task("math_rm_workflow");
  FakeModelClient policy = byte_client(), rm = byte_client();
  policy.push({"The answer is 4."});
  policy.push({"The answer is 5."});
  rm.responder = [](const FakeModelClient::Call& c, int64_t) -> FakeReply {
    return {c.messages_json.find("is 4.") != std::string::npos ? "```json\n{\"rating\": 10}\n```" : "{\"rating\": 2}"};
  };
  RunContext ctx = context(t, &policy, {&rm}, 2);
  const auto exps = make_workflow("math_rm_workflow", t)->run(ctx);
  ASSERT_EQ(exps.size(), 2u);
  EXPECT_NEAR(*exps[0].reward, 1.0, 1e-12);
  EXPECT_NEAR(*exps[1].reward, 0.2, 1e-12);
  EXPECT_EQ(exps[0].metrics.at("judge_success"), 1.0);
  for (const auto& c : rm.calls()) {
    EXPECT_EQ(c.opt.temperature.value_or(-1.0), 0.0);
    const auto [sys, user] = sys_user(c);
    EXPECT_EQ(sys, math_rm_system_prompt());
    EXPECT_EQ(user.rfind("<question>\nWhat is 2+2?\n</question>\n<reference_answer>\n4\n</reference_answer>\n"
                         "<solution>\nThe answer is ",
                         0),
              0u)
        << user;
  }
  EXPECT_EQ(math_rm_user_prompt("q", "", "r"),
            "<question>\nq\n</question>\n<solution>\nr\n</solution>\nYour JSON Evaluation:");

  t.reward_fn = "math_reward";
  try {
    make_workflow("math_rm_workflow", t);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("reward_fn 'math_reward' would not be used"), std::string::npos) << e.what();
  }
  t.reward_fn = "rm_gallery_reward";
  t.reward_fn_args = R"({"reward_name": "math_verify_reward"})";
  policy.push({"4"});
  RunContext one = context(t, &policy, {&rm}, 1);
  const auto noted = make_workflow("math_rm_workflow", t)->run(one);
  EXPECT_NE(info_of(noted[0])["judge_note"].get<std::string>().find("math_verify_reward"), std::string::npos);
}

TEST(MathRm, UnparsableFails) {
  const buffer::Task t = math_task("math_rm_workflow");
  FakeModelClient policy = byte_client(), rm = byte_client();
  rm.responder = [](const FakeModelClient::Call&, int64_t) -> FakeReply { return {"good"}; };
  RunContext ctx = context(t, &policy, {&rm}, 1);
  try {
    make_workflow("math_rm_workflow", t)->run(ctx);
    FAIL();
  } catch (const JudgeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[judge] unparsable: math_rm_workflow run 0", 0), 0u) << e.what();
  }
}

// ---- rubric_judge_openai_workflow (configuration) ----

TEST(RubricJudgeOpenAI, ArgsAndEnvironment) {
  buffer::Task t = rubric_task(json::array());
  t.workflow = "rubric_judge_openai_workflow";
  try {
    make_workflow(t.workflow, t);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("workflow_args.judge_model_name is required"), std::string::npos) << e.what();
  }
  t.workflow_args = R"({"judge_model_name": "gpt-4o", "judge_api_base_url_env": "TRINITY_TEST_JUDGE_URL_UNSET"})";
  ::unsetenv("TRINITY_TEST_JUDGE_URL_UNSET");
  try {
    make_workflow(t.workflow, t);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("set the environment variable TRINITY_TEST_JUDGE_URL_UNSET"),
              std::string::npos)
        << e.what();
  }
  ::setenv("TRINITY_TEST_JUDGE_URL", "http://127.0.0.1:9/v1/", 1);
  ::setenv("TRINITY_TEST_JUDGE_KEY", "sk-test", 1);
  const OpenAIJudge j = OpenAIJudge::from_env("w", "gpt-4o", "TRINITY_TEST_JUDGE_URL", "TRINITY_TEST_JUDGE_KEY", 5);
  EXPECT_EQ(j.base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(j.api_key, "sk-test");
  t.workflow_args = R"({"judge_model_name": "gpt-4o", "judge_api_base_url_env": "TRINITY_TEST_JUDGE_URL",
                        "judge_api_key_env": "TRINITY_TEST_JUDGE_KEY", "judge_timeout": 5})";
  EXPECT_NO_THROW(make_workflow(t.workflow, t));
  t.workflow_args = R"({"judge_model_name": "gpt-4o", "judge_url": "x"})";
  EXPECT_THROW(make_workflow(t.workflow, t), ConfigError);
}

TEST(RubricJudgeOpenAI, RequestBodyAndResponse) {
  OpenAIJudge j;
  j.model = "gpt-4o";
  j.base_url = "http://127.0.0.1:9/v1";
  const json body = json::parse(j.request_body(judge_messages("S", "U"), 0.0));
  EXPECT_EQ(body, json::parse(R"({"model": "gpt-4o", "temperature": 0.0, "stream": false,
    "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]})"));
  EXPECT_EQ(
      j.response_content(200, R"({"choices": [{"message": {"role": "assistant", "content": "{\"rating\": 7}"}}]})"),
      "{\"rating\": 7}");
  try {
    j.response_content(401, R"({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})");
    FAIL();
  } catch (const JudgeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[judge] http: POST http://127.0.0.1:9/v1/chat/completions (model gpt-4o): HTTP 401: Incorrect API key "
              "provided");
  }
  for (const char* bad : {"not json", R"({"choices": []})", R"({"choices": [{"message": {"content": null}}]})"}) {
    try {
      j.response_content(200, bad);
      FAIL() << bad;
    } catch (const JudgeError& e) {
      EXPECT_NE(std::string(e.what()).find("no choices[0].message.content"), std::string::npos) << e.what();
    }
  }
}

// A one-shot HTTP server on 127.0.0.1: records the request it gets and answers with `reply`.
class OneShotServer {
 public:
  explicit OneShotServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 1) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      ADD_FAILURE() << "cannot listen";
    port = ntohs(a.sin_port);
    th_ = std::thread([this] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      size_t need = std::string::npos;
      while (request.size() < need) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
        const size_t h = request.find("\r\n\r\n");
        if (h != std::string::npos && need == std::string::npos) {
          const size_t cl = request.find("Content-Length: ");
          need = h + 4 + (cl == std::string::npos ? 0 : std::stoul(request.substr(cl + 16)));
        }
      }
      (void)!::send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~OneShotServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    th_.join();
  }
  int port = 0;
  std::string request;  // read after the client call returned

 private:
  std::string reply_;
  int fd_ = -1;
  std::thread th_;
};

std::string http_reply(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

TEST(RubricJudgeOpenAI, JudgesThroughAnOpenAICompatibleEndpoint) {
  OneShotServer srv(http_reply(
      200, R"({"choices": [{"message": {"role": "assistant", "content": "```json\n{\"rating\": 6}\n```"}}]})"));
  ::setenv("TRINITY_TEST_JUDGE_URL2", ("http://127.0.0.1:" + std::to_string(srv.port) + "/v1").c_str(), 1);
  ::setenv("TRINITY_TEST_JUDGE_KEY2", "sk-judge", 1);
  buffer::Task t = rubric_task(json::array({{{"weight", 1}, {"description", "Correct"}}}));
  t.workflow = "rubric_judge_openai_workflow";
  t.repeat_times = 1;
  t.workflow_args = R"({"judge_model_name": "judge-m", "judge_api_base_url_env": "TRINITY_TEST_JUDGE_URL2",
                        "judge_api_key_env": "TRINITY_TEST_JUDGE_KEY2", "judge_timeout": 10})";
  FakeModelClient policy = byte_client();
  policy.push({"Light to sugar."});
  RunContext ctx = context(t, &policy, {}, 1);
  const auto exps = make_workflow(t.workflow, t)->run(ctx);
  ASSERT_EQ(exps.size(), 1u);
  EXPECT_NEAR(*exps[0].reward, 0.6, 1e-12);
  EXPECT_EQ(info_of(exps[0])["judge"][0]["judge"], "openai:judge-m");
  // The request: POST /v1/chat/completions, bearer key, upstream's prompts at temperature 0.
  EXPECT_EQ(srv.request.rfind("POST /v1/chat/completions HTTP/1.1\r\n", 0), 0u) << srv.request;
  EXPECT_NE(srv.request.find("Authorization: Bearer sk-judge\r\n"), std::string::npos) << srv.request;
  const json body = json::parse(srv.request.substr(srv.request.find("\r\n\r\n") + 4));
  EXPECT_EQ(body["model"], "judge-m");
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_EQ(body["messages"][0]["content"], kUpstreamRubricSystem);
  EXPECT_EQ(body["messages"][1]["content"],
            upstream_rubric_user(t.task_desc, "Light to sugar.", "Rubric 0 (weight: 1): Correct"));
}

TEST(RubricJudgeOpenAI, HttpFailuresAreJudgeHttpErrors) {
  OneShotServer srv(http_reply(500, R"({"error": {"message": "overloaded"}})"));
  OpenAIJudge j;
  j.model = "m";
  j.timeout_s = 10;
  j.base_url = "http://127.0.0.1:" + std::to_string(srv.port) + "/v1";
  try {
    j.chat(judge_messages("S", "U"), 0.0);
    FAIL();
  } catch (const JudgeError& e) {
    EXPECT_NE(std::string(e.what()).find("[judge] http: POST http://127.0.0.1:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("HTTP 500: overloaded"), std::string::npos) << e.what();
  }
  // Nobody listens: a port bound and released again.
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), len), 0);
  ASSERT_EQ(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(s);
  j.base_url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/v1";
  try {
    j.chat(judge_messages("S", "U"), 0.0);
    FAIL();
  } catch (const JudgeError& e) {
    EXPECT_NE(std::string(e.what()).find("[judge] http: POST http://127.0.0.1:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(": connect: "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trinity::workflow
