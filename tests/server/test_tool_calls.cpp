// Qwen / Hermes tool-call parsing: one or several <tool_call> blocks, content before them,
// unterminated last block, malformed blocks keeping everything as content; and the streaming
// filter that holds back a possible "<tool_call>" prefix.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/tool_calls.h"

using namespace trinity::server;

TEST(ToolCalls, NoCallIsAllContent) {
  ParsedToolCalls p = parse_tool_calls("Hello there.");
  ASSERT_TRUE(p.content.has_value());
  EXPECT_EQ(*p.content, "Hello there.");
  EXPECT_TRUE(p.calls.empty());
}

TEST(ToolCalls, OneCall) {
  ParsedToolCalls p = parse_tool_calls(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>");
  EXPECT_FALSE(p.content.has_value());
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(p.calls[0].id.size(), 29u);
  const auto args = nlohmann::json::parse(p.calls[0].arguments);
  EXPECT_EQ(args["city"], "Paris");
  EXPECT_EQ(args["days"], 2);
}

TEST(ToolCalls, ContentThenSeveralCalls) {
  ParsedToolCalls p = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>");
  ASSERT_TRUE(p.content.has_value());
  EXPECT_EQ(*p.content, "Let me check.\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "a");
  EXPECT_EQ(p.calls[0].arguments, "{}");
  EXPECT_EQ(p.calls[1].name, "b");
  EXPECT_EQ(p.calls[1].arguments, "{\"x\": 1}");  // a string argument is passed through
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
}

TEST(ToolCalls, UnterminatedLastBlockAndMissingArguments) {
  ParsedToolCalls p = parse_tool_calls("<tool_call>\n{\"name\": \"f\"}\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "f");
  EXPECT_EQ(p.calls[0].arguments, "{}");
}

TEST(ToolCalls, MalformedBlocksKeepEverythingAsContent) {
  for (const std::string text :
       {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\n</tool_call>", "<tool_call>[1, 2]</tool_call>",
        "<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"name\": \"\"}</tool_call>",
        "<tool_call>{\"name\": \"f\"}</tool_call> and then prose"}) {
    ParsedToolCalls p = parse_tool_calls(text);
    EXPECT_TRUE(p.calls.empty()) << text;
    ASSERT_TRUE(p.content.has_value());
    EXPECT_EQ(*p.content, text);
  }
}

// Model output nested past the JSON depth limit (or with an overflowing number) is not a call:
// it stays content instead of recursing through it or escaping as an exception.
TEST(ToolCalls, TooDeepOrOverflowingBlocksStayContent) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& text :
       {"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + deep + "}}</tool_call>",
        std::string("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1e400}}</tool_call>")}) {
    ParsedToolCalls p = parse_tool_calls(text);
    EXPECT_TRUE(p.calls.empty());
    ASSERT_TRUE(p.content.has_value());
    EXPECT_EQ(*p.content, text);
  }
}

TEST(ToolCalls, StreamFilterHoldsBackTheTag) {
  ToolCallStreamFilter f;
  std::string out;
  out += f.push("Sure");
  out += f.push(", <");
  EXPECT_EQ(out, "Sure, ");  // "<" might start the tag
  out += f.push("b>bold");
  EXPECT_EQ(out, "Sure, <b>bold");  // it did not
  out += f.push(" <tool");
  out += f.push("_call>\n{\"name\"");
  out += f.push(": \"f\"}</tool_call>");
  EXPECT_EQ(out, "Sure, <b>bold ");
  EXPECT_TRUE(f.in_tool_call());
  EXPECT_EQ(f.held(), "<tool_call>\n{\"name\": \"f\"}</tool_call>");
  EXPECT_EQ(parse_tool_calls(out + f.held()).calls.size(), 1u);
}

TEST(ToolCalls, StreamFilterReleasesAPartialTagOnlyAtTheEnd) {
  ToolCallStreamFilter f;
  EXPECT_EQ(f.push("x <tool_c"), "x ");
  EXPECT_FALSE(f.in_tool_call());
  EXPECT_EQ(f.held(), "<tool_c");  // the server flushes held() as content when the stream ends
}
