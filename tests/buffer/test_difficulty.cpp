// BOTS (difficulty_based): the estimator against a hand-computed update and an independent numpy model
// of trinity-rft.md §4.5 (bots_oracle.py), greedy and softmax selection, Thompson samples against the
// Beta moments, kwargs errors, and the scheduler path: selection follows feedback and a saved state
// (with the estimator) resumes the same sequence.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "buffer/dataset.h"
#include "buffer/difficulty_estimator.h"
#include "buffer/task_scheduler.h"
#include "core/error.h"
#include "core/rng.h"
#include "test_util.h"

using namespace trinity::buffer;
using nlohmann::json;
using trinity::buffer::testing::temp_dir;

namespace {

DifficultyParams params(double m, double lamb, double rho, bool adaptive = false) {
  DifficultyParams p;
  p.m = m, p.lamb = lamb, p.rho = rho, p.adaptive_rho = adaptive;
  return p;
}

std::string run_oracle(const json& in) {
  const std::string d = temp_dir("bots_oracle");
  std::ofstream(d + "/in.json") << in.dump();
  const std::string cmd =
      std::string("/usr/bin/python3 ") + TRINITY_SOURCE_DIR + "/tests/buffer/bots_oracle.py " + d + "/in.json";
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return "";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(f), 0) << cmd;
  return out;
}

}  // namespace

TEST(BotsEstimator, OneUpdateByHand) {
  // f = [[0.2, 0.6], [0.5, 0.9]], m 4, λ 0.5, ρ 0.5; task 0 observed at pass rate 0.5.
  // cap = (0.5 - 0.2) / (0.6 - 0.2 + 1e-6); p̃₁ = 0.5 + 0.4·cap; p̃₀ = 0.5 (observed)
  // α₀ = 0.5 + 0.5 + 0.5·2 + 0.5·0.5·4 = 3, β₀ = 3; α₁ = 1 + 2·p̃₁, β₁ = 1 + 2·(1 − p̃₁)
  DifficultyEstimator e({{0.2, 0.6}, {0.5, 0.9}}, params(4, 0.5, 0.5));
  e.feedback({0}, {0.5});
  const double cap = 0.3 / 0.400001, p1 = 0.5 + 0.4 * cap;
  ASSERT_TRUE(e.cap());
  EXPECT_NEAR(*e.cap(), cap, 1e-12);
  EXPECT_NEAR(e.alphas()[0], 3.0, 1e-12);
  EXPECT_NEAR(e.betas()[0], 3.0, 1e-12);
  EXPECT_NEAR(e.alphas()[1], 1 + 2 * p1, 1e-12);
  EXPECT_NEAR(e.betas()[1], 1 + 2 * (1 - p1), 1e-12);
  // Greedy toward 1.0 prefers task 1 (p̂ ≈ 0.65); toward 0.5 task 0 (p̂ = 0.5).
  DifficultyParams p = params(4, 0.5, 0.5);
  p.tau = 0;
  DifficultyEstimator g({{0.2, 0.6}, {0.5, 0.9}}, p);
  g.feedback({0}, {0.5});
  EXPECT_EQ(g.select(1, 42, 0), std::vector<int64_t>{1});
  p.target_reward = 0.5;
  DifficultyEstimator h({{0.2, 0.6}, {0.5, 0.9}}, p);
  h.feedback({0}, {0.5});
  EXPECT_EQ(h.select(2, 42, 0), (std::vector<int64_t>{0, 1}));
}

TEST(BotsEstimator, MatchesIndependentNumpyModel) {
  trinity::Rng rng(5);
  const size_t n = 40;
  json feats = json::array();
  std::vector<std::array<double, 2>> f;
  for (size_t i = 0; i < n; ++i) {
    const double a = rng.uniform(), b = std::min(1.0, a + 0.5 * rng.uniform());
    feats.push_back({a, b});
    f.push_back({a, b});
  }
  for (bool adaptive : {false, true}) {
    DifficultyEstimator e(f, params(16, 0.2, 0.3, adaptive));
    json fb = json::array();
    std::vector<std::vector<double>> alphas, betas;
    std::vector<double> caps, rhos;
    for (int step = 0; step < 12; ++step) {
      std::vector<int64_t> rows;
      std::vector<double> prs;
      for (int k = 0; k < 6; ++k) {
        rows.push_back(static_cast<int64_t>(rng.below(n)));
        prs.push_back(static_cast<double>(rng.below(17)) / 16.0);
      }
      // A row listed twice: the later pass rate wins, as in numpy's fancy assignment.
      if (step == 3) rows[1] = rows[0];
      e.feedback(rows, prs);
      fb.push_back({rows, prs});
      alphas.push_back(e.alphas()), betas.push_back(e.betas()), caps.push_back(*e.cap()), rhos.push_back(e.rho());
    }
    const json o = json::parse(run_oracle(
        {{"features", feats}, {"m", 16}, {"lamb", 0.2}, {"rho", 0.3}, {"adaptive_rho", adaptive}, {"feedback", fb}}));
    ASSERT_EQ(o["alphas"].size(), alphas.size());
    for (size_t step = 0; step < alphas.size(); ++step) {
      for (size_t j = 0; j < n; ++j) {
        ASSERT_NEAR(alphas[step][j], o["alphas"][step][j].get<double>(), 1e-9) << "step " << step << " task " << j;
        ASSERT_NEAR(betas[step][j], o["betas"][step][j].get<double>(), 1e-9) << "step " << step << " task " << j;
      }
      EXPECT_NEAR(caps[step], o["cap"][step].get<double>(), 1e-12);
      EXPECT_DOUBLE_EQ(rhos[step], o["rho"][step].get<double>());
    }
    if (adaptive) {
      EXPECT_LT(e.rho(), 0.3);  // the random pass rates are far from the interpolation
    }
  }
}

TEST(BotsEstimator, ThompsonSamplesHaveBetaMoments) {
  for (auto [a, b] : {std::pair{3.0, 1.4}, std::pair{0.5, 0.7}, std::pair{12.0, 30.0}}) {
    DifficultyParams p;
    p.do_sample = true;
    p.target_reward = 0;  // score = −p̂, so the samples are −score
    DifficultyEstimator e({{0, 0}}, p);
    e.load_state(json({{"alphas", {a}}, {"betas", {b}}, {"cap", nullptr}, {"rho", 0.2}}).dump(), "test");
    const int k = 40000;
    double s = 0, s2 = 0;
    for (int i = 0; i < k; ++i) {
      const double x = -e.scores(42, i)[0];
      ASSERT_GE(x, 0.0);
      ASSERT_LE(x, 1.0);
      s += x, s2 += x * x;
    }
    const double mean = s / k, var = s2 / k - mean * mean;
    const double m = a / (a + b), v = a * b / ((a + b) * (a + b) * (a + b + 1));
    EXPECT_NEAR(mean, m, 4 * std::sqrt(v / k)) << a << "," << b;
    EXPECT_NEAR(var, v, 0.05 * v) << a << "," << b;
  }
}

TEST(BotsEstimator, SoftmaxSamplingFollowsTheScores) {
  // Three tasks with point estimates 0.25, 0.5, 0.75 toward target 1 at τ = 0.25: the first pick is
  // softmax(score/τ) distributed, and k picks are distinct.
  DifficultyParams p;
  p.tau = 0.25;
  DifficultyEstimator e({{0, 0}, {0, 0}, {0, 0}}, p);
  e.load_state(R"({"alphas": [1, 2, 3], "betas": [3, 2, 1], "cap": null, "rho": 0.2})", "test");
  const std::vector<double> score = {-0.75, -0.5, -0.25};
  double z = 0;
  for (double s : score) z += std::exp(s / 0.25);
  std::vector<int> first(3, 0);
  const int k = 30000;
  for (int i = 0; i < k; ++i) {
    auto sel = e.select(2, 7, i);
    ASSERT_EQ(sel.size(), 2u);
    ASSERT_NE(sel[0], sel[1]);
    first[static_cast<size_t>(sel[0])]++;
  }
  for (size_t j = 0; j < 3; ++j) {
    const double pj = std::exp(score[j] / 0.25) / z;
    EXPECT_NEAR(first[j] / double(k), pj, 4 * std::sqrt(pj * (1 - pj) / k)) << j;
  }
  EXPECT_EQ(e.select(2, 7, 11), e.select(2, 7, 11));  // deterministic per (seed, current_index)
}

TEST(BotsEstimator, KwargsAreChecked) {
  auto p = DifficultyParams::from_kwargs(R"({"m": 8, "lamb": 0.1, "rho": 0.1, "target_reward": 0.5, "tau": 0,
                                             "do_sample": true, "adaptive_rho": true})",
                                         "t");
  EXPECT_EQ(p.m, 8);
  EXPECT_EQ(p.tau, 0);
  EXPECT_TRUE(p.do_sample);
  EXPECT_TRUE(p.adaptive_rho);
  try {
    DifficultyParams::from_kwargs(R"({"lambda": 0.1})", "math");
    FAIL();
  } catch (const trinity::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'lambda'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lamb"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("math"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DifficultyParams::from_kwargs(R"({"tau": -1})", "t"), trinity::ConfigError);
  EXPECT_THROW(DifficultyParams::from_kwargs(R"({"do_sample": 1})", "t"), trinity::ConfigError);
  EXPECT_THROW(DifficultyParams::from_kwargs(R"({"rho": 1.5})", "t"), trinity::ConfigError);
}

TEST(BotsScheduler, SelectsFromFeedbackAndResumes) {
  const std::string d = temp_dir("bots_sched");
  std::string rows;
  for (int i = 0; i < 20; ++i) {
    json row = {{"question", "q"}, {"weak", i / 20.0}, {"strong", std::min(1.0, i / 20.0 + 0.3)}};
    row["question"] = row["question"].get<std::string>() + std::to_string(i);
    rows += row.dump();
    rows += '\n';
  }
  std::ofstream(d + "/t.jsonl") << rows;
  TasksetConfig c;
  c.name = "bots";
  c.path = d + "/t.jsonl";
  c.format.prompt_key = "question";
  c.data_selector.selector_type = "difficulty_based";
  c.data_selector.feature_keys = {"weak", "strong"};
  c.data_selector.kwargs = R"({"target_reward": 0.5, "tau": 0, "m": 8})";
  auto ts = std::make_shared<const Taskset>(Taskset::load(c));
  ASSERT_EQ(ts->features().size(), 20u);
  EXPECT_DOUBLE_EQ(ts->features()[4][1], 0.5);

  // The model does a bit better than the weak reference: every pass rate is weak + 0.1.
  auto run = [&](TasksetScheduler& s, int steps, std::vector<std::vector<int64_t>>& seq) {
    for (int k = 0; k < steps; ++k) {
      auto batch = s.next_batch();
      ASSERT_TRUE(batch);
      std::vector<int64_t> rs;
      std::vector<double> pr;
      for (const auto& t : *batch) {
        rs.push_back(t.index.row);
        pr.push_back(std::min(1.0, t.index.row / 20.0 + 0.1));
      }
      seq.push_back(rs);
      s.feedback(0, rs, pr);
    }
  };
  TasksetScheduler a({ts}, 4, 1, /*total_steps=*/8);
  EXPECT_TRUE(a.wants_feedback());
  std::vector<std::vector<int64_t>> seq;
  run(a, 4, seq);
  const std::string mid = a.state();
  EXPECT_TRUE(json::parse(mid)["taskset_states"][0].contains("estimator"));
  run(a, 4, seq);
  // After feedback the selector centres on rows whose predicted pass rate is near 0.5 (rows 6..10).
  for (int64_t r : seq.back()) EXPECT_TRUE(r >= 5 && r <= 11) << r;
  std::set<int64_t> distinct(seq.back().begin(), seq.back().end());
  EXPECT_EQ(distinct.size(), 4u);

  TasksetScheduler b({ts}, 4, 1, 8);
  b.load_state(mid);
  std::vector<std::vector<int64_t>> rest;
  run(b, 4, rest);
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(rest[k], seq[4 + k]) << "step " << 4 + k;

  // Without the estimator in the state (Trinity-RFT's resume) the selection would differ.
  TasksetScheduler cold({ts}, 4, 1, 8);
  json pos = json::parse(mid);
  pos["taskset_states"][0].erase("estimator");
  cold.load_state(pos.dump());
  std::vector<std::vector<int64_t>> cold_seq;
  run(cold, 1, cold_seq);
  EXPECT_NE(cold_seq[0], seq[4]);

  // state_with_live_estimators keeps the position and takes the estimator of now.
  const json live = json::parse(a.state_with_live_estimators(mid));
  EXPECT_EQ(live["step"], 4);
  EXPECT_EQ(live["taskset_states"][0]["estimator"], json::parse(a.state())["taskset_states"][0]["estimator"]);
}

TEST(BotsScheduler, ConfigErrorsNameTheTaskset) {
  TasksetConfig c;
  c.name = "math";
  c.data_selector.selector_type = "difficulty_based";
  c.data_selector.feature_keys = {"only_one"};
  try {
    check_selector(c);
    FAIL();
  } catch (const trinity::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("taskset 'math'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exactly 2"), std::string::npos) << e.what();
  }
  c.data_selector.selector_type = "difficulty_base";
  try {
    check_selector(c);
    FAIL();
  } catch (const trinity::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("difficulty_based"), std::string::npos) << e.what();
  }
}
