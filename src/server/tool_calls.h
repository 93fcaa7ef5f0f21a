// Tool-call parsing for Qwen / Hermes style models: the model writes
//   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
// (one block per call; the last one may be unterminated when generation stopped first). The text
// before the first block is the message content (null when empty); arguments are re-serialized
// as the JSON string OpenAI's tool_calls carry. Any block that is not such a JSON object makes the
// whole output plain content (as vLLM's hermes parser does), so nothing the model wrote is lost.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/protocol.h"

namespace trinity::server {

struct ParsedToolCalls {
  std::optional<std::string> content;
  std::vector<ToolCall> calls;  // empty: no (valid) tool calls, content is the whole text
};

ParsedToolCalls parse_tool_calls(const std::string& text);

// "call_" + 24 random alphanumerics.
std::string new_tool_call_id();

// Streaming side: passes content deltas through until "<tool_call>" starts, holding back a tail
// that could be the start of that tag; everything from the tag on is held for parse_tool_calls.
class ToolCallStreamFilter {
 public:
  // Returns the part of `delta` that is safe to stream as content now.
  std::string push(std::string_view delta);
  // At the end: the held-back text (a partial tag, or the tool-call section).
  const std::string& held() const { return held_; }
  bool in_tool_call() const { return in_call_; }

 private:
  std::string held_;
  bool in_call_ = false;
};

}  // namespace trinity::server
