// The agent quickstart end to end (examples/agents/add_agent.yaml): a tiny model, SFT-warmed on
// conversations that call a tool in 30 % of the cases, is trained with GRPO through command_workflow
// running the standard-library Python agent examples/agents/add_agent.py. The greedy eval reward must
// rise by at least 0.4 over the GRPO stage's first eval (the SFT model) within 10 minutes on 2 cores,
// and the model must have learned to call the tool.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;

TEST(AgentQuickstart, GrpoTeachesThePythonAgentsModelToUseItsTool) {
  const fs::path dir = fs::temp_directory_path() / ("trinity-agent-quickstart-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const std::string bin = std::string(TRINITY_BINARY_DIR) + "/trinity";
  const std::string ex = std::string(TRINITY_SOURCE_DIR) + "/examples/agents";
  const std::string log = dir.string() + ".log";
  // The system python3 first: a version-manager shim in front of it can cost seconds per agent start.
  const std::string cmd =
      "set -e; export PATH=/usr/bin:$PATH TRINITY_AGENT_QUICKSTART_DIR='" + dir.string() + "'; " + bin +
      " init-model --arch qwen2 --hidden 64 --layers 2 --heads 4 --intermediate 256 --max-pos 256 --tokenizer bytes"
      " --seed 1 --out '" +
      dir.string() + "/model'; python3 '" + ex + "/make_add_data.py' --out '" + dir.string() + "/data'; timeout 600 " +
      bin + " run --config '" + ex + "/add_agent.yaml'";  // its 40 GRPO steps
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(("bash -c \"" + cmd + "\" > '" + log + "' 2>&1").c_str());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream logf(log);
  const std::string out((std::istreambuf_iterator<char>(logf)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << out.substr(out.size() > 4000 ? out.size() - 4000 : 0);
  EXPECT_LT(secs, 600) << "the demo must learn within 10 minutes";

  std::ifstream in(dir / "checkpoints/agent-quickstart/add/grpo/monitor/metrics.jsonl");
  ASSERT_TRUE(in.good());
  std::map<int64_t, double> eval, tools;
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line);
    if (j["role"] != "explorer") continue;
    if (j.contains("eval/add_eval/correct/mean@1")) eval[j["step"].get<int64_t>()] = j["eval/add_eval/correct/mean@1"];
    if (j.contains("eval/add_eval/tool_calls/mean@1"))
      tools[j["step"].get<int64_t>()] = j["eval/add_eval/tool_calls/mean@1"];
  }
  ASSERT_GE(eval.size(), 3u) << out.substr(out.size() > 4000 ? out.size() - 4000 : 0);
  const double first = eval.begin()->second;
  double best = first, best_tools = 0;
  for (const auto& [step, v] : eval)
    if (step > eval.begin()->first) best = std::max(best, v);
  for (const auto& [step, v] : tools) best_tools = std::max(best_tools, v);
  std::printf("  eval reward: first %.3f, best %.3f; tool use up to %.2f; %.0f s\n", first, best, best_tools, secs);
  // Measured with the example's GRPO lr of 3e-4: 0.0 -> 0.86-1.0 by step 20 in three seeds. At 1e-3
  // the runs that collapsed (tool calls degraded, then abandoned) stayed at <= 0.22.
  EXPECT_GE(best - first, 0.4) << "eval reward did not rise by 0.4";
  EXPECT_GE(best_tools, 0.5) << "the model did not learn to call the tool";
  fs::remove_all(dir);
}
