// gather_metrics / eval_stats / task_metrics / aggregate_eval against hand-computed values; the
// bootstrap best@n / worst@n against the analytic expectation of the max / min of n draws.
#include <gtest/gtest.h>

#include <cmath>

#include "monitor/metrics_util.h"

using namespace trinity::monitor;

TEST(MetricsUtil, GatherOverRowsThatHaveTheKey) {
  const std::vector<Metrics> rows = {{{"accuracy", 1.0}, {"format", 0.5}},
                                     {{"accuracy", 0.0}},
                                     {{"accuracy", 0.5}, {"format", NAN}}};
  const Metrics m = gather_metrics(rows, "rollout");
  EXPECT_DOUBLE_EQ(m.at("rollout/accuracy/mean"), 0.5);
  EXPECT_DOUBLE_EQ(m.at("rollout/accuracy/max"), 1.0);
  EXPECT_DOUBLE_EQ(m.at("rollout/accuracy/min"), 0.0);
  EXPECT_DOUBLE_EQ(m.at("rollout/format/mean"), 0.5);  // one row has it; NaN counts as missing
  EXPECT_DOUBLE_EQ(m.at("rollout/format/max"), 0.5);
  EXPECT_EQ(m.size(), 6u);
  EXPECT_TRUE(gather_metrics({}, "rollout").empty());
}

TEST(MetricsUtil, EvalStatsMeanStdAndNs) {
  const Metrics m = eval_stats({1, 0, 0, 1, 1}, "accuracy");
  EXPECT_DOUBLE_EQ(m.at("accuracy/mean@5"), 0.6);
  EXPECT_NEAR(m.at("accuracy/std@5"), std::sqrt(0.24), 1e-12);  // population std: sqrt(p(1-p))
  for (const char* k : {"accuracy/best@2", "accuracy/best@4", "accuracy/best@5", "accuracy/worst@2",
                        "accuracy/worst@4", "accuracy/worst@5"})
    EXPECT_TRUE(m.count(k)) << k;
  EXPECT_EQ(m.size(), 8u);
  EXPECT_EQ(eval_stats({1, 2, 3, 4, 5, 6, 7, 8}, "x").count("x/best@8"), 1u);
  EXPECT_EQ(eval_stats({1, 2, 3, 4, 5, 6, 7, 8}, "x").size(), 2u + 2 * 3);  // n = 2, 4, 8
  const Metrics one = eval_stats({0.7}, "x");
  EXPECT_EQ(one.size(), 2u);  // k = 1: no best/worst
  EXPECT_DOUBLE_EQ(one.at("x/mean@1"), 0.7);
  EXPECT_DOUBLE_EQ(one.at("x/std@1"), 0.0);
  const Metrics t = eval_stats({1.0, 2.0, 4.0}, "time/run_execution");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_NEAR(t.at("time/run_execution"), 7.0 / 3.0, 1e-12);
}

// E[max of n iid uniform draws from sorted v_1..v_k] = sum_i v_i ((i/k)^n - ((i-1)/k)^n).
static double expected_max(std::vector<double> v, int n) {
  std::sort(v.begin(), v.end());
  const double k = static_cast<double>(v.size());
  double e = 0;
  for (size_t i = 1; i <= v.size(); ++i) e += v[i - 1] * (std::pow(i / k, n) - std::pow((i - 1) / k, n));
  return e;
}

TEST(MetricsUtil, BootstrapMatchesAnalyticExpectation) {
  const std::vector<double> v = {0, 1, 2, 3};
  EXPECT_DOUBLE_EQ(expected_max(v, 2), 34.0 / 16.0);  // the formula itself, by hand
  const Metrics m = eval_stats(v, "r");
  // 1000 resamples: the max of 2 draws has sd ~0.93, so the mean's sd is ~0.03; allow ~4 sd.
  EXPECT_NEAR(m.at("r/best@2"), 34.0 / 16.0, 0.12);
  EXPECT_NEAR(m.at("r/best@4"), 670.0 / 256.0, 0.12);
  EXPECT_NEAR(m.at("r/worst@2"), 3.0 - 34.0 / 16.0, 0.12);  // symmetric values: min = 3 - max
  EXPECT_NEAR(m.at("r/worst@4"), 3.0 - 670.0 / 256.0, 0.12);
  const std::vector<double> w = {0.1, 0.9, 0.3, 0.5, 0.2, 0.0, 1.0, 0.4, 0.6, 0.8};
  const Metrics mw = eval_stats(w, "r");
  for (int n : {2, 4, 8, 10}) EXPECT_NEAR(mw.at("r/best@" + std::to_string(n)), expected_max(w, n), 0.05) << n;
  // Deterministic for a seed; another seed gives another (but close) estimate.
  EXPECT_EQ(eval_stats(w, "r").at("r/best@4"), mw.at("r/best@4"));
  EXPECT_NE(eval_stats(w, "r", 7).at("r/best@4"), mw.at("r/best@4"));
  // Best is monotone in n, worst antitone, and they bracket the mean.
  EXPECT_LE(mw.at("r/best@2"), mw.at("r/best@4"));
  EXPECT_GE(mw.at("r/worst@2"), mw.at("r/worst@4"));
  EXPECT_LE(mw.at("r/worst@2"), mw.at("r/mean@10"));
  EXPECT_GE(mw.at("r/best@2"), mw.at("r/mean@10"));
}

TEST(MetricsUtil, TaskMetricsTrainAndEval) {
  const std::vector<Metrics> runs = {{{"accuracy", 1.0}, {"time/run_execution", 2.0}},
                                     {{"accuracy", 0.0}, {"time/run_execution", 4.0}}};
  const Metrics train = task_metrics(runs, false);
  EXPECT_DOUBLE_EQ(train.at("accuracy"), 0.5);
  EXPECT_DOUBLE_EQ(train.at("time/run_execution"), 3.0);
  const Metrics ev = task_metrics(runs, true);
  EXPECT_DOUBLE_EQ(ev.at("accuracy/mean@2"), 0.5);
  EXPECT_DOUBLE_EQ(ev.at("accuracy/std@2"), 0.5);
  EXPECT_TRUE(ev.count("accuracy/best@2"));
  EXPECT_DOUBLE_EQ(ev.at("time/run_execution"), 3.0);
  EXPECT_FALSE(ev.count("time/run_execution/mean@2"));
}

TEST(MetricsUtil, AggregateEvalAcrossTasks) {
  const std::vector<Metrics> tasks = {{{"accuracy/mean@4", 1.0}, {"time/task_execution", 1.0}},
                                      {{"accuracy/mean@4", 0.5}, {"time/task_execution", 3.0}},
                                      {{"accuracy/mean@4", 0.0}, {"time/task_execution", 2.0}}};
  const Metrics m = aggregate_eval(tasks, "eval/gsm8k", false);
  EXPECT_DOUBLE_EQ(m.at("eval/gsm8k/accuracy/mean@4"), 0.5);
  EXPECT_DOUBLE_EQ(m.at("eval/gsm8k/time/task_execution"), 2.0);
  EXPECT_DOUBLE_EQ(m.at("eval/gsm8k/finished_task_count"), 3.0);
  EXPECT_EQ(m.size(), 3u);
  const Metrics d = aggregate_eval(tasks, "eval/gsm8k", true);
  EXPECT_DOUBLE_EQ(d.at("eval/gsm8k/accuracy/mean@4/mean"), 0.5);
  EXPECT_NEAR(d.at("eval/gsm8k/accuracy/mean@4/std"), std::sqrt(1.0 / 6.0), 1e-12);  // population
  EXPECT_DOUBLE_EQ(d.at("eval/gsm8k/accuracy/mean@4/max"), 1.0);
  EXPECT_DOUBLE_EQ(d.at("eval/gsm8k/accuracy/mean@4/min"), 0.0);
  EXPECT_DOUBLE_EQ(d.at("eval/gsm8k/time/task_execution"), 2.0);
  EXPECT_EQ(d.size(), 6u);
}
