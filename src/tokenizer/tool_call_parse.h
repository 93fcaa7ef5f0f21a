// Tool calls in model output, in the two conventions chat templates teach:
//   hermes (Qwen2.5/Qwen3, Hermes): <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, one
//     block per call, the last one may be unterminated (generation stopped first); the text before the
//     first block is the message content (null when blank);
//   llama3_json (Llama 3.1/3.2): the whole message is {"name": "f", "parameters": {...}} (also
//     "arguments"), optionally after <|python_tag|>, several calls separated by ';'; content is null.
// Arguments are re-serialized as the JSON string OpenAI's tool_calls carry. Output that is not such
// a call (bad JSON, no name, text between blocks) is plain content, as vLLM's parsers do, so nothing
// the model wrote is lost. Used by the server (server/tool_calls.h) and by tool-using workflows.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trinity::tok {

struct ToolCall {
  std::string id;  // "call_..."
  std::string name;
  std::string arguments;  // JSON text of the arguments object
};

struct ParsedToolCalls {
  std::optional<std::string> content;
  std::vector<ToolCall> calls;  // empty: no (valid) tool calls, content is the whole text
};

enum class ToolCallFormat { kHermes, kLlama3Json };

// "hermes" (alias "qwen") | "llama3_json" (alias "llama3"); ConfigError "[tokenizer] ..." naming the
// value otherwise.
ToolCallFormat tool_call_format_from_name(std::string_view name);
const char* tool_call_format_name(ToolCallFormat f);
// The convention a chat template (its source, or a rendering with tools) teaches: one that mentions
// <tool_call> is hermes, anything else Llama-3 JSON.
ToolCallFormat tool_call_format_for_template(std::string_view template_text);

ParsedToolCalls parse_tool_calls(const std::string& text, ToolCallFormat format = ToolCallFormat::kHermes);

// End (one past the closing brace) of the JSON value opening at s[0] ('{' or '['), strings and
// escapes respected; npos when unbalanced. Shared by tool-call and judge-score parsing.
size_t json_object_end(std::string_view s);

// "call_" + 24 random alphanumerics.
std::string new_tool_call_id();

// Streaming side (hermes): passes content deltas through until "<tool_call>" starts, holding back a
// tail that could be the start of that tag; everything from the tag on is held for parse_tool_calls.
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

}  // namespace trinity::tok
