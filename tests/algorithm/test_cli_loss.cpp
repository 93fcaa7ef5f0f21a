// `trinity debug loss` end to end without PyTorch: hand-computed GRPO values, filtering and
// duplication of groups, micro-batch splitting, and error exits with clear messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

using nlohmann::json;

struct Result {
  int rc;
  json out;
  std::string err;
};

Result run(const json& in, const std::string& name) {
  const std::string dir = std::string(TRINITY_BINARY_DIR) + "/tests/algorithm";
  const std::string ip = dir + "/cli_" + name + ".in.json", op = dir + "/cli_" + name + ".out.json",
                    ep = dir + "/cli_" + name + ".err";
  std::ofstream(ip) << in.dump();
  std::remove(op.c_str());
  const std::string cmd = std::string(TRINITY_BINARY_DIR) + "/trinity debug loss --input " + ip + " --output " + op +
                          " 2> " + ep;
  const int status = std::system(cmd.c_str());
  Result r{WEXITSTATUS(status), json(), ""};
  std::stringstream es;
  es << std::ifstream(ep).rdbuf();
  r.err = es.str();
  if (r.rc == 0) r.out = json::parse(std::ifstream(op));
  return r;
}

json grpo_input() {
  // Group g: rewards 1 and 0 → a = ±0.5/(std + ε) = ±0.70711; current = rollout logprobs (r = 1).
  return json{{"algorithm", {{"algorithm_type", "grpo"}, {"kl_loss_fn", "none"}}},
              {"experiences",
               {{{"group", "g"}, {"reward", 1.0}, {"logprobs", {-1.0, -2.0}}, {"action_mask", {1, 1}}},
                {{"group", "g"}, {"reward", 0.0}, {"logprobs", {-0.5, -0.25, -1.0}}, {"action_mask", {1, 0, 1}}}}},
              {"current_logprobs", {{-1.0, -2.0}, {-0.5, -0.25, -1.0}}},
              {"entropy", {{1.0, 1.0}, {1.0, 1.0, 1.0}}}};
}

TEST(CliLoss, GrpoHandValues) {
  const Result r = run(grpo_input(), "grpo");
  ASSERT_EQ(r.rc, 0) << r.err;
  const double a = 0.5 / (std::sqrt(0.5) + 1e-6);
  EXPECT_NEAR(r.out["advantages"][0][0].get<double>(), a, 1e-6);
  EXPECT_NEAR(r.out["advantages"][1][2].get<double>(), -a, 1e-6);
  EXPECT_EQ(r.out["advantages"][1][1].get<double>(), 0.0);
  // token-mean over 4 action tokens of −A·r: (2a − 2a)/4 = 0; d/dlp = −A/4.
  EXPECT_NEAR(r.out["loss"].get<double>(), 0.0, 1e-7);
  EXPECT_NEAR(r.out["dlogprob"][0][1].get<double>(), -a / 4, 1e-6);
  EXPECT_NEAR(r.out["dlogprob"][1][0].get<double>(), a / 4, 1e-6);
  EXPECT_EQ(r.out["dlogprob"][1][1].get<double>(), 0.0);  // masked token
  EXPECT_EQ(r.out["dentropy"][0][0].get<double>(), 0.0);  // entropy_coef 0
  EXPECT_NEAR(r.out["metrics"]["actor/pg_clipfrac"].get<double>(), 0.0, 1e-12);
  EXPECT_NEAR(r.out["metrics"]["experience_pipeline/group_advantages/reward_mean/mean"].get<double>(), 0.5, 1e-12);
  EXPECT_EQ(r.out["algorithm"]["policy_loss_fn"], "ppo");
}

TEST(CliLoss, MicroBatchesGiveTheSameResult) {
  json in = grpo_input();
  in["algorithm"]["kl_loss_fn"] = "k3";
  in["algorithm"]["loss_agg_mode"] = "seq-mean-token-mean";
  in["algorithm"]["entropy_loss_fn_args"] = {{"entropy_coef", 0.1}};
  for (auto& e : in["experiences"]) e["ref_logprobs"] = e["logprobs"];
  in["current_logprobs"] = {{-0.9, -2.1}, {-0.6, -0.2, -1.05}};
  const Result whole = run(in, "whole");
  in["micro_batch_size"] = 1;
  const Result split = run(in, "split");
  ASSERT_EQ(whole.rc, 0) << whole.err;
  ASSERT_EQ(split.rc, 0) << split.err;
  EXPECT_NEAR(whole.out["loss"].get<double>(), split.out["loss"].get<double>(), 1e-9);
  for (int b = 0; b < 2; ++b)
    for (size_t t = 0; t < whole.out["dlogprob"][b].size(); ++t) {
      EXPECT_NEAR(whole.out["dlogprob"][b][t].get<double>(), split.out["dlogprob"][b][t].get<double>(), 1e-7);
      EXPECT_NEAR(whole.out["dentropy"][b][t].get<double>(), split.out["dentropy"][b][t].get<double>(), 1e-7);
    }
  // seq-mean-token-mean entropy bonus: −0.1 · (1/n_b) / N_seqs on action tokens.
  EXPECT_NEAR(whole.out["dentropy"][0][0].get<double>(), -0.1 / 2 / 2, 1e-7);
  EXPECT_NEAR(whole.out["dentropy"][1][0].get<double>(), -0.1 / 2 / 2, 1e-7);
}

TEST(CliLoss, FilteredAndDuplicatedGroups) {
  json in = grpo_input();
  in["algorithm"]["advantage_fn_args"] = {{"std_threshold", 0.0}, {"duplicate_experiences", true}};
  // A third experience in its own zero-variance group (a group of one is dropped under std_threshold).
  in["experiences"].push_back({{"group", "h"}, {"reward", 1.0}, {"logprobs", {-1.0}}});
  in["current_logprobs"].push_back({-1.0});
  in["entropy"].push_back({1.0});
  const Result r = run(in, "dup");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out["kept"], json({true, true, false}));
  EXPECT_EQ(r.out["rows"], json({0, 1, 0, 1}));  // group g copied in place of group h
  EXPECT_EQ(r.out["dlogprob"][2][0].get<double>(), 0.0);
  // Duplicated rows count twice; their gradients sum into the source: −A·2/8 per token.
  const double a = 0.5 / (std::sqrt(0.5) + 1e-6);
  EXPECT_NEAR(r.out["dlogprob"][0][0].get<double>(), -a * 2 / 8, 1e-6);
}

TEST(CliLoss, ErrorsAreClear) {
  json empty = grpo_input();
  empty["experiences"] = json::array();
  empty["current_logprobs"] = json::array();
  Result r = run(empty, "empty");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("empty batch"), std::string::npos) << r.err;
  json typo = grpo_input();
  typo["algorithm"]["advantage_fn"] = "grpoo";
  r = run(typo, "typo");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("valid names are"), std::string::npos) << r.err;
  json key = grpo_input();
  key["algorithm"]["kl_los_fn"] = "k2";
  r = run(key, "key");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("did you mean 'kl_loss_fn'"), std::string::npos) << r.err;
  json shape = grpo_input();
  shape["entropy"][0] = {1.0};
  r = run(shape, "shape");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("expected 2"), std::string::npos) << r.err;
}

}  // namespace
