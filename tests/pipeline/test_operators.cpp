// Experience operators against hand cases (Trinity-RFT's reward_filter, reward_std_filter,
// invalid_reward_filter, reward_shaping_mapper semantics), the pipeline's order, metric names and
// timings, and argument / name errors.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "pipeline/operators.h"

namespace trinity::pipeline {
namespace {

buffer::Experience exp(int64_t task, std::optional<double> reward, const std::string& info = "") {
  buffer::Experience e;
  e.eid.task = task;
  e.reward = reward;
  e.info = info;
  return e;
}

std::vector<double> rewards(const std::vector<buffer::Experience>& v) {
  std::vector<double> r;
  for (const auto& e : v) r.push_back(e.reward.value_or(-999));
  return r;
}

TEST(ExperienceOperators, RewardFilterKeepsAtLeastThreshold) {
  std::vector<buffer::Experience> v = {exp(0, 0.5), exp(0, 0.1), exp(1, 0.2), exp(1, std::nullopt)};
  auto m = make_operator({"reward_filter", R"({"threshold": 0.2})"})->process(v);
  EXPECT_EQ(rewards(v), (std::vector<double>{0.5, 0.2}));
  EXPECT_EQ(m.at("filtered_count"), 2);
  std::vector<buffer::Experience> w = {exp(0, -0.1), exp(0, 0.0)};
  make_operator({"reward_filter", "{}"})->process(w);  // default threshold 0
  EXPECT_EQ(rewards(w), (std::vector<double>{0.0}));
}

TEST(ExperienceOperators, RewardStdFilterDropsFlatAndSingletonGroups) {
  // task 0: rewards {1, 1} (std 0), task 1: {0, 1} (std 0.5), task 2: one run, task 3: {0, 0.2} (std 0.1)
  std::vector<buffer::Experience> v = {exp(0, 1), exp(1, 0), exp(0, 1), exp(1, 1), exp(2, 1), exp(3, 0), exp(3, 0.2)};
  auto m = make_operator({"reward_std_filter", "{}"})->process(v);
  EXPECT_EQ(rewards(v), (std::vector<double>{0, 1, 0, 0.2}));  // order kept
  EXPECT_EQ(m.at("filtered_count"), 3);
  make_operator({"reward_std_filter", R"({"threshold": 0.1})"})->process(v);  // population std 0.1 <= 0.1
  EXPECT_EQ(rewards(v), (std::vector<double>{0, 1}));
}

TEST(ExperienceOperators, InvalidRewardFilterDropsPendingAndNaN) {
  std::vector<buffer::Experience> v = {exp(0, 1), exp(0, std::nan("")), exp(0, std::nullopt), exp(0, -1)};
  auto m = make_operator({"invalid_reward_filter", "{}"})->process(v);
  EXPECT_EQ(rewards(v), (std::vector<double>{1, -1}));
  EXPECT_EQ(m.at("filtered_count"), 2);
}

TEST(ExperienceOperators, RewardShapingMapperAppliesEachConfigInOrder) {
  std::vector<buffer::Experience> v = {exp(0, 1.0, R"({"q": 0.5, "len": 2})"), exp(0, 2.0, R"({"q": 0})"), exp(0, 3.0),
                                       exp(0, std::nullopt, R"({"q": 1})")};
  auto op = make_operator({"reward_shaping_mapper", R"({"reward_shaping_configs": [
      {"stats_key": "q", "op_type": "ADD", "weight": 2.0},
      {"stats_key": "len", "op_type": "DIV", "weight": 1.0},
      {"stats_key": "q", "op_type": "MUL", "weight": 1.0}]})"});
  auto m = op->process(v);
  // e0: (1 + 2*0.5) / 2 * 0.5 = 0.5; e1: 2 + 0 = 2, no len, * 0 = 0; e2: no stats = 3; e3: pending.
  EXPECT_DOUBLE_EQ(*v[0].reward, 0.5);
  EXPECT_DOUBLE_EQ(*v[1].reward, 0.0);
  EXPECT_DOUBLE_EQ(*v[2].reward, 3.0);
  EXPECT_FALSE(v[3].reward.has_value());
  EXPECT_DOUBLE_EQ(m.at("reward_diff/mean"), (-0.5 - 2.0 + 0 + 0) / 4);
  EXPECT_DOUBLE_EQ(m.at("reward_diff/min"), -2.0);
  EXPECT_DOUBLE_EQ(m.at("reward_diff/max"), 0.0);
  std::vector<buffer::Experience> z = {exp(0, 4.0, R"({"d": 0})")};
  make_operator({"reward_shaping_mapper", R"({"reward_shaping_configs": [{"stats_key": "d", "op_type": "DIV"}]})"})
      ->process(z);
  EXPECT_DOUBLE_EQ(*z[0].reward, 4.0) << "DIV by 0 is skipped";
  std::vector<buffer::Experience> none;
  EXPECT_EQ(make_operator({"reward_shaping_mapper", "{}"})->process(none).at("reward_diff/mean"), 0.0);
}

TEST(ExperienceOperators, PipelineRunsInOrderWithPrefixedMetricsAndTimings) {
  ExperiencePipeline p({{"invalid_reward_filter", "{}"}, {"reward_filter", R"({"threshold": 0.5})"}});
  std::vector<buffer::Experience> v = {exp(0, 1), exp(0, std::nullopt), exp(1, 0.2), exp(1, 0.7)};
  const auto m = p.run(v);
  EXPECT_EQ(rewards(v), (std::vector<double>{1, 0.7}));
  EXPECT_EQ(m.at("experience_pipeline/filtered_count"), 2) << "the same key from two operators is summed";
  EXPECT_TRUE(m.count("time/experience_pipeline/operator/0_invalid_reward_filter"));
  EXPECT_TRUE(m.count("time/experience_pipeline/operator/1_reward_filter"));
  EXPECT_TRUE(ExperiencePipeline({}).empty());
}

TEST(ExperienceOperators, PassRateCalculatorFeedsTheSelector) {
  auto at = [](int64_t ts, int64_t row) {
    return strcat(R"({"task_index": {"index": )", row, R"(, "taskset_id": )", ts, "}}");
  };
  // taskset 0: row 7 {1, 0, 1, 1} -> 0.75, row 2 {0, 0} -> 0; taskset 1: row 7 {1} -> 1;
  // no task index / pending reward: skipped.
  std::vector<buffer::Experience> v = {exp(0, 1, at(0, 7)), exp(0, 0, at(0, 7)), exp(1, 0, at(0, 2)),
                                       exp(0, 1, at(0, 7)), exp(2, 1, at(1, 7)), exp(0, 1, at(0, 7)),
                                       exp(1, 0, at(0, 2)), exp(3, 1),           exp(3, std::nullopt, at(0, 9))};
  OperatorContext ctx;
  auto m = make_operator({"pass_rate_calculator", "{}"})->process(v, ctx);
  EXPECT_EQ(v.size(), 9u);  // passes everything through
  ASSERT_EQ(ctx.selector_feedback.size(), 2u);
  EXPECT_EQ(ctx.selector_feedback[0].rows, (std::vector<int64_t>{7, 2}));  // first-appearance order
  EXPECT_EQ(ctx.selector_feedback[0].values, (std::vector<double>{0.75, 0.0}));
  EXPECT_EQ(ctx.selector_feedback[1].rows, (std::vector<int64_t>{7}));
  EXPECT_EQ(ctx.selector_feedback[1].values, (std::vector<double>{1.0}));
  // Pass rates {0.75, 0, 1}.
  EXPECT_DOUBLE_EQ(m.at("selection/valid_ratio"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.at("selection/strict_valid_ratio"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.at("selection/<1_ratio"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.at("selection/>0_ratio"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.at("selection/<15_16_ratio"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.at("selection/>1_16_ratio"), 2.0 / 3);
  EXPECT_EQ(m.at("selection/skipped_count"), 2);
  // Through the pipeline: metrics are prefixed, feedback reaches the caller's context.
  ExperiencePipeline p({{"reward_filter", R"({"threshold": 0.5})"}, {"pass_rate_calculator", "{}"}});
  OperatorContext c2;
  auto pm = p.run(v, c2);
  EXPECT_EQ(c2.selector_feedback[0].rows, (std::vector<int64_t>{7}));  // row 2 filtered out before
  EXPECT_DOUBLE_EQ(c2.selector_feedback[0].values[0], 1.0);
  EXPECT_DOUBLE_EQ(pm.at("experience_pipeline/selection/valid_ratio"), 0.0);
  EXPECT_TRUE(pm.count("time/experience_pipeline/operator/1_pass_rate_calculator"));
  // An empty step gives no ratios (and no feedback).
  std::vector<buffer::Experience> none;
  OperatorContext c3;
  EXPECT_FALSE(make_operator({"pass_rate_calculator", "{}"})->process(none, c3).count("selection/valid_ratio"));
  EXPECT_TRUE(c3.selector_feedback.empty());
}

TEST(ExperienceOperators, BadNamesAndArgumentsAreConfigErrors) {
  auto msg = [](const OperatorConfig& c) {
    try {
      make_operator(c);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(
      msg({"reward_filtr", "{}"}).find("unknown experience operator 'reward_filtr' (did you mean 'reward_filter'?)"),
      std::string::npos);
  EXPECT_NE(msg({"data_juicer", "{}"}).find("'command' operator"), std::string::npos);
  EXPECT_NE(msg({"pass_rate_calculator", R"({"x": 1})"}).find("unknown argument 'x'"), std::string::npos);
  EXPECT_NE(
      msg({"reward_filter", R"({"treshold": 1})"}).find("unknown argument 'treshold' (did you mean 'threshold'?)"),
      std::string::npos);
  EXPECT_NE(msg({"reward_filter", R"({"threshold": "high"})"}).find("threshold must be a number"), std::string::npos);
  EXPECT_NE(msg({"reward_shaping_mapper", R"({"reward_shaping_configs": [{"stats_key": "q", "op_type": "POW"}]})"})
                .find("op_type 'POW' is not ADD, SUB, MUL or DIV"),
            std::string::npos);
  EXPECT_NE(msg({"reward_shaping_mapper", R"({"reward_shaping_configs": [{"op_type": "ADD"}]})"})
                .find("stats_key is required"),
            std::string::npos);
}

}  // namespace
}  // namespace trinity::pipeline
