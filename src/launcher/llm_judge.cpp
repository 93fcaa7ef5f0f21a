// Judge models for llm_score (see llm_judge.h).
#include "launcher/llm_judge.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "explorer/engine_client.h"
#include "explorer/external_client.h"
#include "launcher/launcher.h"

namespace trinity::launcher {

pipeline::AskFactory llm_judge_factory(const config::Config& c) {
  return [c](const pipeline::OperatorConfig& op) -> pipeline::Ask {
    const nlohmann::json a = nlohmann::json::parse(op.args.empty() ? "{}" : op.args);
    const std::string at = strcat("operator '", op.name, "': ");
    workflow::GenOptions g;
    g.temperature = a.value("temperature", 0.0);
    g.max_tokens = a.value("max_tokens", int64_t{64});
    if (a.contains("api_url") == a.contains("auxiliary_model"))
      throw ConfigError("pipeline", at + "give the judge as api_url (+ model) or as auxiliary_model (an index into "
                                         "explorer.auxiliary_models), exactly one");
    if (a.contains("api_url")) {
      explorer::ExternalModelOptions o;
      o.base_url = a.at("api_url").get<std::string>();
      while (!o.base_url.empty() && o.base_url.back() == '/') o.base_url.pop_back();
      if (o.base_url.rfind("http://", 0) != 0 && o.base_url.rfind("https://", 0) != 0)
        throw ConfigError("pipeline", strcat(at, "api_url '", o.base_url, "' is not an http:// or https:// URL"));
      o.model_name = a.value("model", std::string());
      if (o.model_name.empty())
        throw ConfigError("pipeline", at + "model (the API's model name) is required with api_url");
      const char* key = std::getenv(a.value("api_key_env", std::string("OPENAI_API_KEY")).c_str());
      o.api_key = key && *key ? key : "EMPTY";
      o.timeout_s = a.value("timeout", 120.0);
      auto m = std::make_shared<const explorer::ExternalModel>(o, "");
      return [m, g](const std::string& messages) {
        explorer::ExternalClient client(m, nullptr);
        const auto s = client.chat(messages, g);
        return s.empty() ? std::string() : s[0].text;
      };
    }
    const int64_t i = a.at("auxiliary_model").get<int64_t>();
    const auto aux = make_auxiliary_models(c);
    if (i < 0 || static_cast<size_t>(i) >= aux.size())
      throw ConfigError(
          "pipeline", strcat(at, "auxiliary_model ", i, " is out of range: explorer.auxiliary_models has ", aux.size(),
                             " model(s)"));
    auto rm = aux[static_cast<size_t>(i)];
    return [rm, g](const std::string& messages) {
      explorer::EngineClient client(rm, nullptr, 0);
      const auto s = client.chat(messages, g);
      return s.empty() ? std::string() : s[0].text;
    };
  };
}

}  // namespace trinity::launcher
