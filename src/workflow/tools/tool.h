// Tool: what a tool-using workflow (react_workflow) can call. A tool has a name, an OpenAI function
// schema that the chat template renders into the prompt (`tools`), and call(arguments) -> text for
// the `tool` message. Arguments come from model output, so bad arguments are a result with
// error = true that the model gets to read, never an exception; exceptions are for broken setups.
#pragma once

#include <string>

namespace trinity::workflow {

struct ToolResult {
  std::string text;         // the `tool` message content
  bool error = false;       // bad arguments, a failed run (non-zero exit, crash) or a timeout
  bool timed_out = false;   // the wall-clock limit ended it
  bool unisolated = false;  // network isolation was asked for and the kernel refused it (python tool)
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual std::string name() const = 0;
  // {"type": "function", "function": {"name", "description", "parameters": <JSON schema>}} as JSON text.
  virtual std::string schema_json() const = 0;
  // `arguments_json`: the call's arguments (a JSON object as text, as OpenAI tool_calls carry them).
  virtual ToolResult call(const std::string& arguments_json) = 0;
};

}  // namespace trinity::workflow
