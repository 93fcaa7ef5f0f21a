// recorded_call: Completion -> tok::RecordedCall (see recorded_call.h).
#include "engine/recorded_call.h"

namespace trinity::engine {

tok::RecordedCall recorded_call(const Completion& c, const std::vector<int32_t>& prompt_ids, std::string id,
                                int64_t choice, double start, double seconds, std::string endpoint) {
  tok::RecordedCall rc;
  rc.id = std::move(id);
  rc.choice = choice;
  rc.prompt_ids = prompt_ids;
  rc.ids = c.token_ids;
  rc.logprobs = c.logprobs;
  rc.model_version = c.model_version;
  rc.finish_reason = c.finish_reason;
  rc.start = start;
  rc.seconds = seconds;
  rc.endpoint = std::move(endpoint);
  return rc;
}

}  // namespace trinity::engine
