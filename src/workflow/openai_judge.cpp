// OpenAIJudge: configuration from the environment, and the chat completions call. The HTTP call needs
// env::http_request (src/env/http_client.h, branch env-transport), which is not in this build yet:
// chat() throws UnsupportedError saying so. TODO(judges): call env::http_request once it is merged.
#include "workflow/openai_judge.h"

#include <cstdlib>

#include "core/error.h"

namespace trinity::workflow {

OpenAIJudge OpenAIJudge::from_env(const std::string& workflow, const std::string& model_name,
                                  const std::string& base_url_env, const std::string& api_key_env, double timeout_s) {
  if (model_name.empty())
    throw ConfigError("workflow", strcat(workflow,
                                         ": workflow_args.judge_model_name is required (the judge's model "
                                         "name at the OpenAI-compatible endpoint, e.g. \"gpt-4o\")"));
  if (!(timeout_s > 0))
    throw ConfigError("workflow",
                      strcat(workflow, ": workflow_args.judge_timeout must be > 0 seconds, got ", timeout_s));
  OpenAIJudge j;
  j.model = model_name;
  const char* url = std::getenv(base_url_env.c_str());
  if (url == nullptr || *url == '\0')
    throw ConfigError("workflow", strcat(workflow, ": the judge's base URL is missing: set the environment variable ",
                                         base_url_env, " (workflow_args.judge_api_base_url_env)"));
  j.base_url = url;
  while (!j.base_url.empty() && j.base_url.back() == '/') j.base_url.pop_back();
  const char* key = std::getenv(api_key_env.c_str());
  j.api_key = key ? key : "";
  j.timeout_s = timeout_s;
  return j;
}

std::string OpenAIJudge::chat(const std::string& messages, double temperature) const {
  (void)messages;
  (void)temperature;
  throw UnsupportedError("workflow", strcat("rubric_judge_openai_workflow is unfinished in this build: it needs the "
                                            "HTTP client env::http_request (src/env/http_client.h), not merged yet; "
                                            "judge through explorer.auxiliary_models with rubric_judge_workflow"));
}

}  // namespace trinity::workflow
