// Concatenated multi-turn experiences, token-in / token-out (frozen_lake_workflow, react_workflow):
// ONE sequence per episode, laid out as
//   [apply_chat_template(first messages, gen) ids]                 prompt
//   [sampled ids of turn 0]                                        mask 1, rollout logprobs
//   [glue: end-of-turn rest + next messages + generation prompt]   mask 0, logprob 0
//   [sampled ids of turn 1] ...
// The glue is cut from a rendering of the conversation in which the last assistant turn holds a
// sentinel (and no tool_calls: the sampled text already carries them): everything after the
// sentinel's end-of-turn token (the sampled EOS already supplies it) is tokenized on its own, so no
// sampled text is ever re-tokenized and the next prompt is the sequence so far.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "buffer/experience.h"
#include "workflow/model_client.h"

namespace trinity::workflow {

// Template inputs that must be the same for every rendering of one episode.
struct TurnTemplate {
  std::string tools_json;               // JSON array of tool schemas, "" = none
  std::optional<bool> enable_thinking;  // chat template variable (Qwen3)
};

// Ids that follow the sampled ids `last` of the assistant turn which came after `history_json` (JSON
// array text of the messages before it): the rest of its end-of-turn, `next_json` (JSON array text of
// the messages after it: user / tool) and the generation prompt. UnsupportedError "[workflow] <who>: ..."
// when the template drops assistant content.
std::vector<int32_t> turn_glue_ids(ModelClient& model, const std::string& history_json, const std::string& next_json,
                                   const Sample& last, const TurnTemplate& tt = {},
                                   const std::string& who = "workflow");

// Appends sampled ids (mask 1, their rollout logprobs) / glue ids (mask 0, logprob 0) to the response.
void append_sampled(buffer::Experience& e, const Sample& s);
void append_glue(buffer::Experience& e, const std::vector<int32_t>& ids);

// prompt_text / response_text decoded from the ids (prompt_length must be set).
void decode_texts(buffer::Experience& e, const ModelClient& model);

}  // namespace trinity::workflow
