// OpenAIJudge: configuration from the environment, the request body, the HTTP call
// (env::http_request: plain http://, one request per connection, a deadline on the whole request) and
// the response parsing. Transport errors (env::EnvError) and bad answers are JudgeError "http".
#include "workflow/openai_judge.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "env/http_client.h"
#include "env/session.h"
#include "workflow/judge.h"

namespace trinity::workflow {

using json = nlohmann::json;

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

std::string OpenAIJudge::request_body(const std::string& messages, double temperature) const {
  json m = json::parse(messages, nullptr, false);
  TRINITY_ASSERT(m.is_array(), "OpenAIJudge::request_body: messages is not a JSON array");
  return json{{"model", model}, {"messages", std::move(m)}, {"temperature", temperature}, {"stream", false}}.dump();
}

std::string OpenAIJudge::response_content(int status, const std::string& body) const {
  const std::string where = strcat("POST ", base_url, "/chat/completions (model ", model, ")");
  const json j = json::parse(body, nullptr, false);
  if (status < 200 || status >= 300) {
    std::string msg = body.substr(0, 200);
    if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message") &&
        j["error"]["message"].is_string())
      msg = j["error"]["message"].get<std::string>();
    throw JudgeError("http", strcat(where, ": HTTP ", status, ": ", msg));
  }
  const json* c = nullptr;
  if (j.is_object() && j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
    const json& ch = j["choices"][0];
    if (ch.is_object() && ch.contains("message") && ch["message"].is_object() && ch["message"].contains("content"))
      c = &ch["message"]["content"];
  }
  if (c == nullptr || !c->is_string())
    throw JudgeError("http",
                     strcat(where, ": the response has no choices[0].message.content string: ", body.substr(0, 200)));
  return c->get<std::string>();
}

std::string OpenAIJudge::chat(const std::string& messages, double temperature) const {
  const std::string url = base_url + "/chat/completions";
  env::Headers headers;
  if (!api_key.empty()) headers.emplace_back("Authorization", "Bearer " + api_key);
  env::HttpResponse r;
  try {
    r = env::http_request("POST", url, request_body(messages, temperature), timeout_s, headers);
  } catch (const env::EnvError& e) {  // connect / timeout / closed / protocol
    throw JudgeError("http",
                     strcat("POST ", url, " (model ", model, "): ", env::fail_reason_name(e.reason()), ": ", e.what()));
  }
  return response_content(r.status, r.body);
}

}  // namespace trinity::workflow
