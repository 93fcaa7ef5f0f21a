// The task pipeline: data ops over target_fields / text_keys, the command operator on task rows (id
// key conflicts, id_key), Trinity's quality / difficulty scores and priority (hand-computed), order,
// top_k, the report, and unknown operators.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "pipeline/task_pipeline.h"

namespace trinity::pipeline {
namespace {

using nlohmann::json;

std::vector<std::string> names_of(const std::vector<std::string>& rows) {
  std::vector<std::string> n;
  for (const auto& r : rows) n.push_back(json::parse(r).at("q").get<std::string>());
  return n;
}

std::vector<std::string> scored_rows() {
  return {R"({"q": "aaaa", "llm_quality_score": 0.8})", R"({"q": "bbbb", "__dj__stats__": {"pass_rate": 0.25}})",
          R"({"q": "cccc", "priority": 2})", R"({"q": "dd"})"};
}

TEST(TaskPipeline, PriorityWithTrinityDefaultWeights) {
  // A: 1.0·0.8 − 0.7·0.5 = 0.45; B: difficulty 1 − 0.25 = 0.75: 0.5 − 0.525 = −0.025; C keeps 2;
  // D (no stats): 0.5 − 0.35 = 0.15.
  TaskPipelineSpec spec;
  spec.prompt_key = "q";
  TaskPipeline p(spec);
  TaskPipelineReport rep;
  const auto out = p.run(scored_rows(), rep);
  EXPECT_EQ(names_of(out), (std::vector<std::string>{"cccc", "aaaa", "dd", "bbbb"}));
  EXPECT_NEAR(json::parse(out[1]).at("priority").get<double>(), 0.45, 1e-12);
  EXPECT_NEAR(json::parse(out[2]).at("priority").get<double>(), 0.15, 1e-12);
  EXPECT_NEAR(json::parse(out[3]).at("priority").get<double>(), -0.025, 1e-12);
  EXPECT_NEAR(json::parse(out[3]).at("difficulty_score").get<double>(), 0.75, 1e-12);
  EXPECT_NEAR(json::parse(out[1]).at("quality_score").get<double>(), 0.8, 1e-12);
  EXPECT_TRUE(rep.sorted);
  EXPECT_EQ(rep.histograms.at("priority").counts.size(), 10u);
  int64_t total = 0;
  for (int64_t c : rep.histograms.at("priority").counts) total += c;
  EXPECT_EQ(total, 4);
}

TEST(TaskPipeline, WeightsTopKAndPerplexityRange) {
  TaskPipelineSpec spec;
  spec.prompt_key = "q";
  spec.priority_weights = R"({"difficulty": 1})";
  spec.top_k = 3;
  TaskPipeline p(spec);
  TaskPipelineReport rep;
  // difficulty only: A 0.5, B 0.75, C 2 (given), D 0.5 -> C, B, A (stable before D), D cut by top_k.
  EXPECT_EQ(names_of(p.run(scored_rows(), rep)), (std::vector<std::string>{"cccc", "bbbb", "aaaa"}));
  EXPECT_EQ(rep.rows_out, 3);
  // Perplexity is min-max normalised over the rows (higher = harder).
  TaskPipeline q(spec);
  const auto out = q.run(
      {R"({"q": "x", "perplexity": 10})", R"({"q": "y", "perplexity": 30})", R"({"q": "z", "perplexity": 20})"}, rep);
  EXPECT_EQ(names_of(out), (std::vector<std::string>{"y", "z", "x"}));
  EXPECT_NEAR(json::parse(out[1]).at("difficulty_score").get<double>(), 0.5, 1e-12);
}

TEST(TaskPipeline, WithoutStatsTheOrderIsKept) {
  TaskPipelineSpec spec;
  spec.prompt_key = "q";
  spec.top_k = 2;
  TaskPipeline p(spec);
  TaskPipelineReport rep;
  const auto out = p.run({R"({"q": "b"})", R"({"q": "a"})", R"({"q": "c"})"}, rep);
  EXPECT_EQ(names_of(out), (std::vector<std::string>{"b", "a"}));
  EXPECT_FALSE(rep.sorted);
  EXPECT_FALSE(json::parse(out[0]).contains("priority"));
}

TEST(TaskPipeline, DataOpsReadTargetFieldsOrTextKeys) {
  TaskPipelineSpec spec;
  spec.prompt_key = "q";
  spec.target_fields = {"q", "a"};
  spec.operators = {{"text_length_filter", R"({"min_len": 6})"},            // "q\na" >= 6 code points
                    {"document_deduplicator", R"({"text_keys": ["a"]})"}};  // duplicates by the answer only
  TaskPipeline p(spec);
  TaskPipelineReport rep;
  const auto out = p.run({R"({"q": "1+1=", "a": "2"})",      // 6 code points "1+1=\n2": kept
                          R"({"q": "1+", "a": "2"})",        // 4: dropped
                          R"({"q": "0+2=", "a": "2"})",      // same answer: duplicate
                          R"({"q": "10+10=", "a": "20"})"},  // kept
                         rep);
  EXPECT_EQ(names_of(out), (std::vector<std::string>{"1+1=", "10+10="}));
  ASSERT_EQ(rep.ops.size(), 2u);
  EXPECT_EQ(rep.ops[0].rows_in, 4);
  EXPECT_EQ(rep.ops[0].rows_out, 3);
  EXPECT_EQ(rep.ops[1].rows_out, 2);
  EXPECT_EQ(rep.ops[1].metrics.at("filtered_count"), 1);
  const json j = json::parse(rep.to_json());
  EXPECT_EQ(j.at("operators").at(1).at("name"), "document_deduplicator");
  EXPECT_NE(rep.to_text().find("document_deduplicator"), std::string::npos);
}

TEST(TaskPipeline, CommandOnTaskRows) {
  TaskPipelineSpec spec;
  spec.prompt_key = "q";
  // Adds a quality score from the length of q and drops rows whose q starts with "x".
  spec.operators = {{"command", json({{"command",
                                       "/usr/bin/python3 -c \"import sys, json\nfor l in sys.stdin:\n"
                                       "    r = json.loads(l)\n    if r['q'].startswith('x'): continue\n"
                                       "    r['llm_quality_score'] = len(r['q']) / 10\n"
                                       "    print(json.dumps(r))\""}})
                                    .dump()}};
  TaskPipeline p(spec);
  TaskPipelineReport rep;
  const auto out = p.run({R"({"q": "ab"})", R"({"q": "xy"})", R"({"q": "abcd"})"}, rep);
  EXPECT_EQ(names_of(out), (std::vector<std::string>{"abcd", "ab"}));  // sorted by quality
  EXPECT_FALSE(json::parse(out[0]).contains("id"));                    // the matching key is removed
  EXPECT_EQ(rep.ops[0].metrics.at("filtered_count"), 1);
  // Rows that have an "id" column need another id_key.
  try {
    p.run({R"({"q": "ab", "id": 7})"}, rep);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("already has a column 'id'"), std::string::npos) << e.what();
  }
  spec.operators[0].args = json({{"command", "cat"}, {"id_key", "_row"}}).dump();
  TaskPipeline q(spec);
  const auto kept = q.run({R"({"q": "ab", "id": 7})"}, rep);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(json::parse(kept[0]), json::parse(R"({"q": "ab", "id": 7})"));
}

TEST(TaskPipeline, UnknownOperatorsAndBadArgs) {
  TaskPipelineSpec spec;
  spec.operators = {{"text_lenght_filter", "{}"}};
  try {
    TaskPipeline p(spec);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'text_length_filter'"), std::string::npos) << e.what();
  }
  spec.operators = {{"rollout_pass_rate", "{}"}};
  try {
    TaskPipeline p(spec);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("rollout_pass_rate and llm_score need a model"), std::string::npos)
        << e.what();
  }
  spec.operators = {{"text_length_filter", R"({"min_len": "x"})"}};
  EXPECT_THROW(TaskPipeline{spec}, ConfigError);
}

}  // namespace
}  // namespace trinity::pipeline
