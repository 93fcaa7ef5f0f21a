// BOTS learning test (examples/bots/run.sh): GRPO on a taskset where half the rows are far too hard
// and a quarter already solved, with BOTS (difficulty_based + pass_rate_calculator, priors from the
// model's own rollout_pass_rate) and with the shuffle baseline, over the same two seeds, 60 steps.
// BOTS must keep far more tasks informative (selection/valid_ratio, 0 < pass rate < 1) and gain more
// greedy eval accuracy over the run: the mean of the evals at steps 5..60 minus the step-0 eval,
// summed over the seeds (relative to the start, so builds whose float arithmetic starts the SFT model
// at another accuracy compare alike). Measured in release on 2 cores (eval every 5): valid_ratio
// 0.78-0.81 vs 0.40-0.41, accuracy 0.5 at step 15 / 5 vs 35 / 30. Over 150 steps shuffle ends higher
// (docs/data.md): BOTS stops rehearsing the rows it has solved.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct RunStats {
  double valid_ratio = 0;
  std::map<int64_t, double> eval;  // step -> accuracy
  int64_t first_step_at(double acc) const {
    for (const auto& [s, a] : eval)
      if (a >= acc) return s;
    return 1000000;
  }
  // Mean eval accuracy after step 0 minus the step-0 accuracy.
  double gain() const {
    double sum = 0;
    int n = 0;
    for (const auto& [s, a] : eval)
      if (s > 0) sum += a, ++n;
    return n && eval.count(0) ? sum / n - eval.at(0) : -1.0;
  }
};

RunStats read_run(const fs::path& metrics) {
  RunStats r;
  std::ifstream in(metrics);
  EXPECT_TRUE(in.good()) << metrics;
  double sum = 0;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    if (j.contains("experience_pipeline/selection/valid_ratio"))
      sum += j["experience_pipeline/selection/valid_ratio"].get<double>(), ++n;
    if (j.contains("eval/arithmetic_eval/accuracy/mean@1"))
      r.eval[j["step"].get<int64_t>()] = j["eval/arithmetic_eval/accuracy/mean@1"].get<double>();
  }
  r.valid_ratio = n ? sum / n : 0;
  return r;
}

}  // namespace

TEST(BotsLearns, MoreInformativeTasksAndFasterEarlyGainThanShuffle) {
  const fs::path dir = fs::temp_directory_path() / ("trinity-bots-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  double bots_gain = 0, shuffle_gain = 0;
  std::string report;
  for (int seed : {1, 2}) {
    const std::string log = dir.string() + "-" + std::to_string(seed) + ".log";
    const std::string cmd = std::string("TRINITY_BIN=") + TRINITY_BINARY_DIR +
                            "/trinity BOTS_STEPS=60 BOTS_EVAL_INTERVAL=5 " + "timeout 900 " + TRINITY_SOURCE_DIR +
                            "/examples/bots/run.sh " + dir.string() + " " + std::to_string(seed) + " > " + log +
                            " 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream lf(log);
    const std::string out((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
    ASSERT_EQ(rc, 0) << out.substr(out.size() > 4000 ? out.size() - 4000 : 0);
    const RunStats b =
        read_run(dir / ("checkpoints/bots/difficulty_based_seed" + std::to_string(seed)) / "monitor/metrics.jsonl");
    const RunStats s =
        read_run(dir / ("checkpoints/bots/shuffle_seed" + std::to_string(seed)) / "monitor/metrics.jsonl");
    EXPECT_GE(b.valid_ratio, s.valid_ratio + 0.25) << "seed " << seed;
    bots_gain += b.gain();
    shuffle_gain += s.gain();
    const double a0 = b.eval.count(0) ? b.eval.at(0) : 0;
    report += "seed " + std::to_string(seed) + ": valid_ratio " + std::to_string(b.valid_ratio) + " vs " +
              std::to_string(s.valid_ratio) + "; accuracy at step 0 " + std::to_string(a0) + ", mean gain " +
              std::to_string(b.gain()) + " vs " + std::to_string(s.gain()) + "; +0.05 reached at step " +
              std::to_string(b.first_step_at(a0 + 0.05)) + " vs " + std::to_string(s.first_step_at(a0 + 0.05)) + "\n";
    fs::remove(log);
  }
  EXPECT_GT(bots_gain, shuffle_gain) << report;
  std::printf("%s", report.c_str());
  fs::remove_all(dir);
}
