// Tool-call parsing for the server: the parser lives in the tokenizer layer
// (tokenizer/tool_call_parse.h) so that workflows can use it without linking the server; the server
// parses the hermes format (Qwen / Hermes <tool_call> blocks) unless told otherwise.
#pragma once

#include "tokenizer/tool_call_parse.h"

namespace trinity::server {

using tok::new_tool_call_id;
using tok::parse_tool_calls;
using tok::ParsedToolCalls;
using tok::ToolCallStreamFilter;

}  // namespace trinity::server
