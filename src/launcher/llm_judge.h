// The judge behind the llm_score operator (pipeline/llm_score.h): from the operator's args, an
// OpenAI-compatible API (api_url, model, api_key_env (key "EMPTY" when unset), timeout) through the
// external-model client (libcurl, retries), or explorer.auxiliary_models[auxiliary_model] on a local
// engine. temperature (0.0) and max_tokens (64) apply to both. Made when the operator first runs.
#pragma once

#include "config/config.h"
#include "pipeline/llm_score.h"

namespace trinity::launcher {

pipeline::AskFactory llm_judge_factory(const config::Config& c);

}  // namespace trinity::launcher
