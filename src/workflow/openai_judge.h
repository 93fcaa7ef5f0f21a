// A judge behind any OpenAI-compatible chat completions endpoint (rubric_judge_openai_workflow;
// upstream RubricJudgeWorkflowWithAPI): the base URL and API key come from environment variables
// named in workflow_args (judge_api_base_url_env = OPENAI_BASE_URL, judge_api_key_env =
// OPENAI_API_KEY), the model from judge_model_name. chat() POSTs {model, messages, temperature,
// stream: false} to <base>/chat/completions with "Authorization: Bearer <key>" and returns
// choices[0].message.content; transport errors and non-2xx answers are JudgeError "http".
#pragma once

#include <string>

namespace trinity::workflow {

struct OpenAIJudge {
  std::string model, base_url, api_key;
  double timeout_s = 600;

  // ConfigError naming the workflow_args key or environment variable that is missing.
  static OpenAIJudge from_env(const std::string& workflow, const std::string& model_name,
                              const std::string& base_url_env, const std::string& api_key_env, double timeout_s);
  // The judgement text for `messages` (JSON array text).
  std::string chat(const std::string& messages, double temperature) const;
  // The request body: {"model", "messages", "temperature", "stream": false}.
  std::string request_body(const std::string& messages, double temperature) const;
  // choices[0].message.content of a response, or JudgeError "http" naming the status and the body's
  // error message (non-2xx, not JSON, no content).
  std::string response_content(int status, const std::string& body) const;
};

}  // namespace trinity::workflow
