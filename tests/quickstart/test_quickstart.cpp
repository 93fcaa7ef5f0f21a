// The README's main job, end to end: scripts/quickstart (init-model, make-data, SFT stage, GRPO
// stage) in a fresh directory. The GRPO stage must raise the greedy eval accuracy by at least 0.3
// over its own first eval (the SFT model), so RL, not SFT, produces the gain; and the run must
// leave an HF checkpoint and metrics of both roles.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;

TEST(Quickstart, GrpoStageRaisesEvalRewardByAtLeast0_3) {
  const fs::path dir = fs::temp_directory_path() / ("trinity-quickstart-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const std::string cmd = std::string("TRINITY_BIN=") + TRINITY_BINARY_DIR + "/trinity timeout 540 " +
                          TRINITY_SOURCE_DIR + "/scripts/quickstart " + dir.string() + " > " + (dir.string() + ".log") +
                          " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream logf(dir.string() + ".log");
  const std::string log((std::istreambuf_iterator<char>(logf)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);

  const fs::path job = dir / "checkpoints/quickstart/arithmetic/grpo";
  std::ifstream in(job / "monitor/metrics.jsonl");
  ASSERT_TRUE(in.good()) << "no metrics.jsonl in " << job;
  std::map<int64_t, double> eval;  // step -> accuracy
  bool trainer = false;
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line);
    if (j["role"] == "trainer" && j.contains("actor/pg_loss")) trainer = true;
    if (j["role"] == "explorer" && j.contains("eval/arithmetic_eval/accuracy/mean@1"))
      eval[j["step"].get<int64_t>()] = j["eval/arithmetic_eval/accuracy/mean@1"].get<double>();
  }
  EXPECT_TRUE(trainer);
  ASSERT_GE(eval.size(), 2u);
  ASSERT_EQ(eval.begin()->first, 0);
  const double first = eval.begin()->second, last = eval.rbegin()->second;
  EXPECT_GE(last - first, 0.3) << "eval accuracy " << first << " -> " << last << "\n" << log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
  EXPECT_TRUE(fs::exists(job / "global_step_200/huggingface/config.json"));
  EXPECT_TRUE(fs::exists(job / "global_step_200/huggingface/tokenizer.json"));
  EXPECT_NE(log.find("eval reward"), std::string::npos);
  fs::remove_all(dir);
  fs::remove(dir.string() + ".log");
}
