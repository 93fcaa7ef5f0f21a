// llm_score with a scripted judge: score parsing, the template, scores into info / columns, the
// score range mapping, filtering, unparsable replies and failing judges (retries), argument errors.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "pipeline/llm_score.h"

namespace trinity::pipeline {
namespace {

using nlohmann::json;

TEST(LlmScore, ParsesScoresRobustly) {
  EXPECT_EQ(parse_score("7"), 7.0);
  EXPECT_EQ(parse_score("I'd say {\"score\": 8.5, \"why\": \"ok\"}"), 8.5);
  EXPECT_EQ(parse_score("{\"score\": \"6\"}"), 6.0);
  EXPECT_EQ(parse_score("Score: 4 because 12 steps"), 4.0);
  EXPECT_EQ(parse_score("rating = 3"), 3.0);
  EXPECT_EQ(parse_score("It is a 9/10 answer"), 9.0);
  EXPECT_EQ(parse_score("\\boxed{2}"), 2.0);
  EXPECT_EQ(parse_score("between 3 and 5, so 5"), 5.0);  // the last number
  EXPECT_FALSE(parse_score("no idea"));
}

std::vector<buffer::Experience> exps() {
  std::vector<buffer::Experience> v(4);
  const char* resp[] = {"great", "meh", "bad", "???"};
  for (int i = 0; i < 4; ++i) {
    v[i].eid.task = i;
    v[i].prompt_text = "q" + std::to_string(i);
    v[i].response_text = resp[i];
    v[i].reward = 1.0;
    v[i].info = R"({"task_index": {"index": 0, "taskset_id": 0}})";
  }
  return v;
}

// Replies by the response in the prompt: great 9, meh 5, bad 1, ??? unparsable.
JudgeFactory scripted(std::atomic<int>* calls = nullptr, std::string* seen = nullptr) {
  return [calls, seen](const OperatorConfig&) -> Ask {
    return [calls, seen](const std::string& messages) {
      if (calls) ++*calls;
      const json m = json::parse(messages);
      const std::string user = m.back().at("content").get<std::string>();
      if (seen) *seen = messages;
      if (user.find("great") != std::string::npos) return std::string("Score: 9");
      if (user.find("meh") != std::string::npos) return std::string("{\"score\": 5}");
      if (user.find("bad") != std::string::npos) return std::string("1/10");
      return std::string("cannot tell");
    };
  };
}

TEST(LlmScore, ExperiencesGetScoresAndAreFiltered) {
  std::atomic<int> calls{0};
  std::string seen;
  auto op = make_operator({"llm_score", R"({"api_url": "http://x", "model": "m", "min_score": 0.4,
                                            "template": "Q: {prompt} A: {response}", "system_prompt": "judge",
                                            "max_retries": 1, "concurrency": 1})"},
                          scripted(&calls, &seen));
  auto v = exps();
  auto m = op->process(v);
  // great 0.9 and meh 0.5 kept; bad 0.1 filtered; ??? unparsable: kept without a score.
  ASSERT_EQ(v.size(), 3u);
  EXPECT_DOUBLE_EQ(json::parse(v[0].info).at("llm_quality_score").get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(json::parse(v[1].info).at("llm_quality_score").get<double>(), 0.5);
  EXPECT_FALSE(json::parse(v[2].info).contains("llm_quality_score"));
  EXPECT_EQ(m.at("filtered_count"), 1);
  EXPECT_EQ(m.at("unparsed_count"), 1);
  EXPECT_NEAR(m.at("mean_score"), 0.5, 1e-12);
  EXPECT_EQ(calls.load(), 5);  // 4 rows + 1 retry of the unparsable one
  EXPECT_NE(seen.find("\"role\":\"system\""), std::string::npos) << seen;
  EXPECT_NE(seen.find("Q: q3 A: ???"), std::string::npos) << seen;
}

TEST(LlmScore, FailingJudgeIsCountedNotFatal) {
  auto op =
      make_operator({"llm_score", R"({"api_url": "http://x", "model": "m", "max_retries": 2, "drop_unparsed": true})"},
                    [](const OperatorConfig&) -> Ask {
                      return [](const std::string&) -> std::string { throw IoError("judge", "connection refused"); };
                    });
  auto v = exps();
  auto m = op->process(v);
  EXPECT_TRUE(v.empty());  // drop_unparsed
  EXPECT_EQ(m.at("error_count"), 4);
}

TEST(LlmScore, TaskRowsUseColumnsAndScoreRange) {
  auto op =
      make_llm_score_task_op({"llm_score", R"({"api_url": "http://x", "model": "m", "score_range": [1, 5],
                                                     "field": "llm_difficulty_score", "template": "{question}"})"},
                             [](const OperatorConfig&) -> Ask {
                               return [](const std::string& m) {
                                 return json::parse(m).back().at("content").get<std::string>() == "hard" ? "5" : "2";
                               };
                             },
                             {"question"});
  std::vector<std::string> rows = {R"({"question": "hard"})", R"({"question": "easy"})"};
  op->process(rows);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(json::parse(rows[0]).at("llm_difficulty_score").get<double>(), 1.0);  // (5 - 1) / 4
  EXPECT_DOUBLE_EQ(json::parse(rows[1]).at("__dj__stats__").at("llm_difficulty_score").get<double>(), 0.25);
  std::vector<std::string> bad = {R"({"q": "x"})"};
  try {
    op->process(bad);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("has no column 'question'"), std::string::npos) << e.what();
  }
}

TEST(LlmScore, ArgumentErrors) {
  auto msg = [](const std::string& args) {
    try {
      make_operator({"llm_score", args}, scripted());
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg(R"({"template": "{question}"})").find("template variable {question}"), std::string::npos);
  EXPECT_NE(msg(R"({"score_range": [5, 1]})").find("score_range must be [low, high]"), std::string::npos);
  EXPECT_NE(msg(R"({"concurency": 3})").find("did you mean 'concurrency'"), std::string::npos);
  // Without a judge the operator is made (config check) and fails when it runs.
  auto op = make_operator({"llm_score", "{}"});
  auto v = exps();
  EXPECT_THROW(op->process(v), UnsupportedError);
}

}  // namespace
}  // namespace trinity::pipeline
