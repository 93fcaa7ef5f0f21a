// Token-in/token-out multi-turn sequences (frozen_lake_workflow, env_workflow): the ids that follow
// a turn's sampled ids — the rest of its end-of-turn, the next messages (user observation, tool
// results) and the generation prompt — cut from a rendering of the conversation in which the
// assistant turn holds a sentinel, so no sampled text is ever re-tokenized.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workflow/model_client.h"

namespace trinity::workflow {

// messages_before: JSON array of the conversation before the assistant turn; assistant: that turn's
// message object (its content is replaced by the sentinel; tool_calls are kept so the template
// renders what follows them correctly); next_messages: JSON array appended after it; tools: JSON
// array or "". `s` is the sample of the assistant turn: when it ended with the template's
// end-of-turn token, the glue starts after that token; otherwise the template's own end-of-turn
// text is part of the glue. UnsupportedError when the template drops assistant content.
std::vector<int32_t> turn_glue_ids(ModelClient& model, const std::string& messages_before, const std::string& assistant,
                                   const std::string& next_messages, const Sample& s, const std::string& tools = "");

}  // namespace trinity::workflow
