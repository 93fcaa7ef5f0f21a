// The record of one sample for a chat history (tok::RecordedCall) from the engine's completion: the
// one conversion the server's recording endpoints and the explorer's model clients share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tokenizer/chat_history.h"

namespace trinity::engine {

// `start`: wall-clock seconds since the epoch when the request was made; `seconds`: its duration.
tok::RecordedCall recorded_call(const Completion& c, const std::vector<int32_t>& prompt_ids, std::string id,
                                int64_t choice, double start, double seconds, std::string endpoint);

}  // namespace trinity::engine
