// Reward functions: the math answer checker on a table of tricky cases (boxed nesting, GSM8K ####
// golds, fractions, mixed numbers, units, percent, thousands commas, tuples, intervals), the
// think/answer format patterns, countdown (TinyZero semantics, safe evaluator), DAPO overlong
// penalty, and registry errors.
#include <gtest/gtest.h>

#include "core/error.h"
#include "workflow/rewards/countdown.h"
#include "workflow/rewards/math_checker.h"
#include "workflow/rewards/reward_fn.h"

namespace trinity::workflow {
namespace {

TEST(MathChecker, LastBoxedWithNestedBraces) {
  EXPECT_EQ(math::last_boxed("a \\boxed{1} then \\boxed{\\frac{1}{2}} end").value(), "\\frac{1}{2}");
  EXPECT_EQ(math::last_boxed("\\boxed{\\left\\{1,2\\right\\}}").value(), "\\left\\{1,2\\right\\}");
  EXPECT_EQ(math::last_boxed("so \\boxed 5$").value(), "5");
  EXPECT_EQ(math::last_boxed("\\fbox{7}").value(), "7");
  EXPECT_FALSE(math::last_boxed("\\boxed{unclosed").has_value());
  EXPECT_FALSE(math::last_boxed("no box").has_value());
}

TEST(MathChecker, ExtractAnswerPriority) {
  EXPECT_EQ(math::extract_answer("<answer>3</answer> \\boxed{4}").value(), "4");
  EXPECT_EQ(math::extract_answer("<think>1 2</think><answer> 12 </answer>").value(), "12");
  EXPECT_EQ(math::extract_answer("first 3 then -4.5 finally").value(), "-4.5");
  EXPECT_EQ(math::extract_answer("total is 1,234 apples").value(), "1,234");
  EXPECT_FALSE(math::extract_answer("no digits here").has_value());
}

TEST(MathChecker, GoldExtraction) {
  EXPECT_EQ(math::extract_gold("Natalia sold 48/2 = <<48/2=24>>24 clips.\n#### 72"), "72");
  EXPECT_EQ(math::extract_gold("The answer is \\boxed{\\frac{3}{4}}"), "\\frac{3}{4}");
  EXPECT_EQ(math::extract_gold("  42 "), "42");
}

struct Case {
  const char* response;
  const char* truth;
  bool expected;
};

TEST(MathChecker, VerifyTable) {
  const Case cases[] = {
      {"\\boxed{72}", "#### 72", true},
      {"\\boxed{72.0}", "72", true},
      {"\\boxed{71}", "72", false},
      {"\\boxed{-3}", "-3", true},
      {"\\boxed{3}", "-3", false},
      {"\\boxed{\\frac{1}{2}}", "0.5", true},
      {"\\boxed{\\dfrac{1}{2}}", "\\frac12", true},
      {"\\boxed{1/2}", "\\frac{1}{2}", true},
      {"\\boxed{-\\frac{3}{4}}", "-0.75", true},
      {"\\boxed{\\frac{-3}{4}}", "-0.75", true},
      {"\\boxed{1\\frac{1}{2}}", "1.5", true},
      {"\\boxed{\\$1,000}", "1000", true},
      {"\\boxed{1,000,000}", "1000000", true},
      {"\\boxed{50\\%}", "50", true},
      {"\\boxed{90^\\circ}", "90", true},
      {"\\boxed{10\\text{ cm}}", "10", true},
      {"\\boxed{\\text{10}}", "10", true},
      {"\\boxed{1.5e3}", "1500", true},
      {"\\boxed{2.5\\times10^{3}}", "2500", true},
      {"\\boxed{2\\sqrt{2}}", "\\sqrt{8}", true},
      {"\\boxed{x=5}", "5", true},
      {"\\boxed{5.}", "5", true},
      {"\\boxed{\\left( 1, 2 \\right)}", "(1,2)", true},
      {"\\boxed{(1, 2.0)}", "(1,2)", true},
      {"\\boxed{(2,1)}", "(1,2)", false},
      {"\\boxed{[0, 1)}", "[0,1)", true},
      {"\\boxed{(0, 1)}", "[0,1)", false},
      {"\\boxed{x^2+1}", "x^2 + 1", true},
      {"\\boxed{x^2+2}", "x^2+1", false},
      {"\\boxed{0.3333}", "\\frac{1}{3}", false},  // outside 1e-6 relative
      {"\\boxed{0.333333333}", "\\frac{1}{3}", true},
      {"<answer>The answer is 72.</answer>", "72", true},
      {"<answer>x = 7</answer>", "7", true},
      {"I think it is 18 and then 20", "#### 20", true},
      {"I think it is 20 and then 18", "#### 20", false},
      {"", "5", false},
      {"\\boxed{}", "5", false},
      {"\\boxed{5}", "", false},
      {"\\boxed{\\frac{1}{0}}", "1", false},
  };
  for (const auto& c : cases)
    EXPECT_EQ(math::verify(c.response, c.truth), c.expected) << "response: " << c.response << "  truth: " << c.truth;
}

TEST(MathChecker, Normalize) {
  EXPECT_EQ(math::normalize(" $\\left(1,2\\right)$ "), "(1,2)");
  EXPECT_EQ(math::normalize("\\tfrac{1}{2}"), "\\frac{1}{2}");
  EXPECT_EQ(math::normalize("\\frac12"), "\\frac{1}{2}");
  EXPECT_EQ(math::normalize("12,345.5"), "12345.5");
  EXPECT_EQ(math::normalize("1,2"), "1,2");  // a list, not a thousands separator
  EXPECT_EQ(*math::to_number("3/4"), 0.75);
  EXPECT_FALSE(math::to_number("x").has_value());
}

TEST(RewardFormat, ThinkAnswerPattern) {
  EXPECT_TRUE(matches_think_answer_format("<think>a</think><answer>b</answer>"));
  EXPECT_TRUE(matches_think_answer_format("pre <think>a\nb</think>\n  <answer>c</answer>\n\n"));
  EXPECT_TRUE(matches_think_answer_format("<think></think><answer></answer>"));
  EXPECT_FALSE(matches_think_answer_format("<think>a</think> x <answer>b</answer>"));
  EXPECT_FALSE(matches_think_answer_format("<think>a</think><answer>b</answer> trailing"));
  EXPECT_FALSE(matches_think_answer_format("<answer>b</answer>"));
  EXPECT_FALSE(matches_think_answer_format("</think><think><answer>b</answer>"));
  // A later </think> can still match the lazy pattern.
  EXPECT_TRUE(matches_think_answer_format("<think>a</think>x</think> <answer>b</answer>"));

  EXPECT_TRUE(matches_strict_think_answer_format("<think>\nr\n</think>\n<answer>\n5\n</answer>"));
  EXPECT_TRUE(matches_strict_think_answer_format("<think>\nr\n</think>\n<answer>\n5\n</answer>\n"));
  EXPECT_FALSE(matches_strict_think_answer_format("<think>r</think>\n<answer>\n5\n</answer>"));
  EXPECT_FALSE(matches_strict_think_answer_format("x<think>\nr\n</think>\n<answer>\n5\n</answer>"));

  EXPECT_TRUE(valid_think_pattern("<think>a</think> b"));
  EXPECT_FALSE(valid_think_pattern("</think><think>"));
  EXPECT_FALSE(valid_think_pattern("<think>a</think><think>b</think>"));
  EXPECT_FALSE(valid_think_pattern("no tags"));
}

TEST(RewardFns, MathReward) {
  auto fn = make_reward_fn("math_reward");
  auto c = fn({"<think>2+2</think> <answer>4</answer>", "4", 10});
  EXPECT_EQ(c.at("accuracy"), 1.0);
  EXPECT_EQ(c.at("format_score"), 0.1);
  c = fn({"4", "5", 1});
  EXPECT_EQ(c.at("accuracy"), 0.0);
  EXPECT_EQ(c.at("format_score"), -0.1);
  EXPECT_NEAR(sum_components(c), -0.1, 1e-12);
}

TEST(RewardFns, MathBoxedReward) {
  auto plain = make_reward_fn("math_boxed_reward");
  auto c = plain({"so \\boxed{6}", "6", 3});
  EXPECT_EQ(c.at("accuracy"), 1.0);
  EXPECT_EQ(c.at("format_score"), 0.0);
  // Only the boxed answer counts: a bare trailing number does not.
  EXPECT_EQ(plain({"the answer is 6", "6", 3}).at("accuracy"), 0.0);
  auto think = make_reward_fn("math_boxed_reward", R"({"with_think": true, "format_score_coef": 0.2})");
  EXPECT_EQ(think({"\\boxed{6}", "6", 3}).at("format_score"), -0.2);
  EXPECT_EQ(think({"<think>x</think>\\boxed{6}", "6", 3}).at("format_score"), 0.0);
}

TEST(RewardFns, FormatAndAccuracy) {
  EXPECT_EQ(make_reward_fn("format_reward")({"<think>\na\n</think>\n<answer>\nb\n</answer>", "", 0}).at("format_score"), 0.1);
  EXPECT_EQ(make_reward_fn("format_reward")({"b", "", 0}).at("format_score"), -0.1);
  auto acc = make_reward_fn("accuracy_reward")({"\\boxed{3}", "#### 3", 0});
  EXPECT_EQ(acc.size(), 1u);
  EXPECT_EQ(acc.at("accuracy"), 1.0);
}

TEST(Countdown, Evaluator) {
  EXPECT_DOUBLE_EQ(*countdown::eval_expression("(1 + 2) * 3 - 4 / 8"), 8.5);
  EXPECT_DOUBLE_EQ(*countdown::eval_expression("-(3-5)*2"), 4.0);
  EXPECT_DOUBLE_EQ(*countdown::eval_expression("7/2"), 3.5);  // true division
  EXPECT_FALSE(countdown::eval_expression("1/0").has_value());
  EXPECT_FALSE(countdown::eval_expression("2**3").has_value());
  EXPECT_FALSE(countdown::eval_expression("8//3").has_value());
  EXPECT_FALSE(countdown::eval_expression("(1+2").has_value());
  EXPECT_FALSE(countdown::eval_expression("1+2)").has_value());
  EXPECT_FALSE(countdown::eval_expression("__import__('os')").has_value());
  EXPECT_FALSE(countdown::eval_expression("1 2").has_value());
  EXPECT_FALSE(countdown::eval_expression("").has_value());
  EXPECT_FALSE(countdown::eval_expression(std::string(5000, '(') + "1" + std::string(5000, ')')).has_value());
}

TEST(Countdown, ScoreCases) {
  auto fn = make_reward_fn("countdown_reward");
  const std::string truth = R"({"target": 24, "numbers": [2, 3, 4]})";
  auto score = [&](const std::string& r) { return fn({r, truth, 0}).at("score"); };
  EXPECT_EQ(score("<think>hmm</think><answer>4 * (3 * 2)</answer>"), 1.0);
  EXPECT_EQ(score("<answer>2*3</answer> then <answer>2*3*4</answer>"), 1.0);  // last answer counts
  EXPECT_EQ(score("no equation"), 0.0);
  EXPECT_EQ(score("<answer>2*3*4*1</answer>"), 0.1);   // 1 is not available
  EXPECT_EQ(score("<answer>(2+4)*4</answer>"), 0.1);   // 4 used twice, 3 unused
  EXPECT_EQ(score("<answer>2+3+4</answer>"), 0.1);     // wrong result
  EXPECT_EQ(score("<answer>2*3*4=24</answer>"), 0.1);  // '=' fails the whitelist -> eval error
  EXPECT_EQ(score("<answer>4/(3-3)*2</answer>"), 0.1);
  EXPECT_EQ(fn({"<answer>10/4*2+(3-3)</answer>", R"({"target": 5, "numbers": [10, 4, 2, 3, 3]})", 0}).at("score"), 1.0);
  EXPECT_THROW(fn({"<answer>1</answer>", "not json", 0}), ValueError);
  EXPECT_THROW(fn({"<answer>1</answer>", R"({"target": 1})", 0}), ValueError);
}

TEST(RewardFns, DapoOverlongPenalty) {
  auto fn = make_reward_fn("math_dapo_reward",
                           R"({"enable_overlong_penalty": true, "penalty_factor": 1.0, "max_response_length": 100, "cache_length": 20})");
  EXPECT_EQ(fn({"Answer: 5", "5", 50}).at("accuracy"), 1.0);
  EXPECT_EQ(fn({"Answer: 6", "5", 50}).at("accuracy"), -1.0);
  EXPECT_EQ(fn({"5", "5", 50}).at("accuracy"), -1.0);  // no "Answer:" line
  EXPECT_EQ(fn({"Answer: 5", "5", 79}).at("format_score"), 0.0);   // L < E = 80
  EXPECT_EQ(fn({"Answer: 5", "5", 80}).at("format_score"), 0.0);
  EXPECT_DOUBLE_EQ(fn({"Answer: 5", "5", 90}).at("format_score"), -0.5);  // (80-90)/20
  EXPECT_DOUBLE_EQ(fn({"Answer: 5", "5", 100}).at("format_score"), -1.0);
  EXPECT_DOUBLE_EQ(fn({"Answer: 5", "5", 101}).at("format_score"), -1.0);
  EXPECT_EQ(make_reward_fn("math_dapo_reward")({"Answer: 5", "5", 100000}).at("format_score"), 0.0);
  EXPECT_THROW(make_reward_fn("math_dapo_reward", R"({"enable_overlong_penalty": true})"), ConfigError);
}

TEST(RewardRegistry, UnknownNameAndArgs) {
  try {
    make_reward_fn("math_rewrad");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[reward] unknown reward_fn 'math_rewrad' (did you mean 'math_reward'?)"), std::string::npos) << m;
    EXPECT_NE(m.find("countdown_reward"), std::string::npos) << m;
  }
  try {
    make_reward_fn("math_boxed_reward", R"({"with_thinkk": true})");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "[reward] unknown key 'math_boxed_reward.reward_fn_args.with_thinkk' (did you mean 'with_think'?); "
                 "valid keys here: format_score_coef, have_think_pattern, use_base, with_think");
  }
  // An integer argument given as a float is a type error naming it (was silently truncated).
  try {
    make_reward_fn("math_dapo_reward", R"({"max_response_length": 10.5})");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "[reward] math_dapo_reward.reward_fn_args.max_response_length: expected an integer, got 10.5");
  }
  EXPECT_THROW(make_reward_fn("math_boxed_reward", R"({"with_think": "yes"})"), ConfigError);
  EXPECT_THROW(make_reward_fn("math_reward", "[1]"), ConfigError);
  register_reward_fn("test_const_reward", [](const std::string&) -> RewardFn {
    return [](const RewardInput&) { return RewardComponents{{"c", 2.0}}; };
  });
  EXPECT_TRUE(has_reward_fn("test_const_reward"));
  EXPECT_EQ(make_reward_fn("test_const_reward")({"", "", 0}).at("c"), 2.0);
}

}  // namespace
}  // namespace trinity::workflow
