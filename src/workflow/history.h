// Recorded model calls -> experiences (issue 12 §1; Trinity's extract_experience_from_history).
// Calls of one run are grouped into chains: a call whose prompt ids start with an earlier call's
// prompt + sampled ids extends that call's chain (token-in / token-out multi-turn). Each chain is
// ONE experience: tokens = the last call's prompt + sampled ids, prompt = the first call's prompt,
// action mask 1 on every sampled token and 0 on what the agent or environment inserted between calls
// (tool results, user turns, template glue), rollout logprobs on sampled tokens (0 elsewhere).
// A call that extends no chain starts a new one: the agent rewrote history (summarised, edited, or
// re-rendered text so the ids differ). Such calls are counted as inconsistent (a sibling sample of
// the same prompt, n > 1, is not) and `notes` says where the ids diverged. With several chains the
// run yields several experiences with eid.step = chain index (0, 1, ...) for step-wise advantages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "buffer/experience.h"
#include "tokenizer/chat_history.h"

namespace trinity::workflow {

struct HistoryExperiences {
  std::vector<buffer::Experience> experiences;  // one per chain, ordered by the chain's first call
  int64_t calls = 0;
  int64_t inconsistent = 0;        // calls that extended no earlier call (siblings excluded)
  std::vector<std::string> notes;  // one per inconsistent call: where its ids diverged
};

// `calls` in the order they were made. Experiences carry no reward, eid.step = chain index,
// model_version = the oldest version in the chain, truncate_status from the last call,
// info {"calls": n, "call_ids": [...], "versions": [...]}. Calls with no sampled ids are skipped.
HistoryExperiences experiences_from_history(const std::vector<tok::RecordedCall>& calls);

}  // namespace trinity::workflow
