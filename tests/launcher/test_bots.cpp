// BOTS end to end through `trinity run`: a taskset with two reference pass-rate columns and
// data_selector difficulty_based, fed by the pass_rate_calculator experience operator. Checks the
// selection/* metrics of every step, that the estimator learned (explorer_meta.json), that a run
// stopped after 2 steps and resumed to 4 ends with exactly the estimator of an uninterrupted 4-step
// run (the estimator is part of the resumable state), and the config errors of `trinity config check`.
#include <gtest/gtest.h>

#include "e2e_util.h"

using namespace trinity::test;

namespace {

// The arithmetic rows plus reference pass rates: weak = (i mod 5) / 5, strong = weak + 0.2.
std::string bots_data(const std::string& root) {
  const std::string path = root + "/data/train_bots.jsonl";
  if (fs::exists(path)) return path;
  std::istringstream in(slurp(root + "/data/train.jsonl"));
  std::string line, out;
  for (int i = 0; std::getline(in, line); ++i) {
    if (line.empty()) continue;
    json row = json::parse(line);
    row["weak"] = (i % 5) / 5.0;
    row["strong"] = std::min(1.0, (i % 5) / 5.0 + 0.2);
    out += row.dump() + "\n";
  }
  write_text(path, out);
  return path;
}

std::string bots_yaml(const std::string& root, const std::string& name) {
  std::string y = base_yaml(root, name);
  const std::string from = "path: " + root + "/data/train.jsonl";
  y.replace(y.find(from), from.size(),
            "path: " + bots_data(root) +
                "\n      data_selector: {selector_type: difficulty_based, feature_keys: [weak, strong],"
                " kwargs: {m: 2, lamb: 0.1, rho: 0.1, target_reward: 0.5, tau: 0, do_sample: true}}");
  y += "data_processor:\n  experience_pipeline:\n    operators:\n      - name: pass_rate_calculator\n";
  return y;
}

json estimator(const std::string& job) {
  return json::parse(slurp(job + "/explorer_meta.json"))
      .at("taskset_states")
      .at("taskset_states")
      .at(0)
      .at("estimator");
}

}  // namespace

TEST(LauncherBots, SelectionMetricsEstimatorAndExactResume) {
  const std::string& root = shared_root();
  const std::string a = "bots_straight", b = "bots_resumed";
  for (const auto& n : {a, b}) fs::remove_all(job_dir(root, n));
  const std::string ca = write_config(root, a, bots_yaml(root, a)), cb = write_config(root, b, bots_yaml(root, b));
  const RunOut ra = trinity::test::trinity({"run", "--config", ca}, root + "/bots_a.log", 120);
  ASSERT_EQ(ra.rc, 0) << ra.out;
  const auto m = read_metrics(job_dir(root, a));
  EXPECT_EQ(metric_steps(m, "explorer", "experience_pipeline/selection/valid_ratio"),
            (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(has_metric(m, "explorer", "experience_pipeline/selection/strict_valid_ratio"));
  EXPECT_TRUE(has_metric(m, "explorer", "time/experience_pipeline/operator/0_pass_rate_calculator"));
  const json ea = estimator(job_dir(root, a));
  ASSERT_EQ(ea.at("alphas").size(), 64u);
  EXPECT_TRUE(ea.at("cap").is_number());
  bool moved = false;
  for (const auto& x : ea.at("alphas")) moved = moved || x.get<double>() != 1.0;
  EXPECT_TRUE(moved) << "the estimator never received feedback";

  const RunOut rb1 =
      trinity::test::trinity({"run", "--config", cb, "--set", "buffer.total_steps=2"}, root + "/bots_b1.log", 120);
  ASSERT_EQ(rb1.rc, 0) << rb1.out;
  const RunOut rb2 = trinity::test::trinity({"run", "--config", cb}, root + "/bots_b2.log", 120);
  ASSERT_EQ(rb2.rc, 0) << rb2.out;
  EXPECT_NE(rb2.out.find("resumed at step 2"), std::string::npos) << rb2.out;
  EXPECT_EQ(estimator(job_dir(root, b)), ea) << "the resumed run selected differently from the straight one";
}

TEST(LauncherBots, ConfigCheckNamesSelectorErrors) {
  const std::string& root = shared_root();
  std::string y = bots_yaml(root, "bots_bad");
  y.replace(y.find("feature_keys: [weak, strong]"), 28, "feature_keys: [weak]");
  const RunOut r = trinity::test::trinity({"config", "check", "--config", write_config(root, "bots_bad", y)},
                                          root + "/bots_bad.log");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("taskset 'arith': difficulty_based needs exactly 2"), std::string::npos) << r.out;
  std::string z = bots_yaml(root, "bots_bad2");
  z.replace(z.find("lamb: 0.1"), 9, "lambda: 0.1");
  const RunOut r2 = trinity::test::trinity({"config", "check", "--config", write_config(root, "bots_bad2", z)},
                                           root + "/bots_bad2.log");
  EXPECT_NE(r2.rc, 0);
  EXPECT_NE(r2.out.find("unknown key 'lambda'"), std::string::npos) << r2.out;
}
