// The rollout model as an external OpenAI-compatible API (model.external_model, bench mode only;
// Trinity-RFT's models/external_model.py). chat() POSTs {model, messages, temperature,
// max_completion_tokens, n} to <base_url>/chat/completions; each choice becomes one Sample with the
// response text, its finish_reason, the request's usage/* as metrics and dummy tokens (prompt_ids {0},
// ids {0}, logprobs {0}: upstream's tokens [0, 0] with prompt_length 1), so workflows compute rewards
// on text as usual. Nothing token-level exists behind such an API: generate_ids, logprobs and chat
// templates throw UnsupportedError. Requests go through libcurl (https and http), with a deadline,
// up to `max_retries` retries on 408/409/429/5xx and dropped connections, and end at once when the
// attempt is cancelled (runner timeout).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "buffer/experience.h"
#include "explorer/engine_client.h"
#include "tokenizer/tokenizer.h"
#include "workflow/model_client.h"

namespace trinity::explorer {

struct ExternalModelOptions {
  std::string base_url;      // e.g. https://api.openai.com/v1 (no trailing '/')
  std::string api_key;       // sent as "Authorization: Bearer <key>"
  std::string model_name;    // the request's "model"
  RolloutDefaults defaults;  // only temperature and max_tokens (-> max_completion_tokens) are sent
  double timeout_s = 1800;   // per request, retries included
  int max_retries = 2;
  double retry_backoff_s = 1.0;  // before retry i (0-based): retry_backoff_s * 2^i
  int64_t max_model_len = 0;     // what max_model_len() reports (model.max_model_len)
};

// What every attempt shares: the options and a tokenizer.
class ExternalModel {
 public:
  // The base URL and key from the environment variables model.external_model names: the URL with
  // trailing '/' removed (unset or empty: ConfigError naming the variable), the key ("EMPTY" when
  // the variable is unset).
  static ExternalModelOptions options_from_env(const std::string& base_url_env, const std::string& api_key_env);

  // `tokenizer_dir`: a local folder with tokenizer.json whose tokenizer workflows see (decoding the
  // dummy ids, counting tokens of text). There is none behind an API, so "" (or a folder without
  // tokenizer.json) gives the built-in byte-level tokenizer.
  ExternalModel(ExternalModelOptions opts, const std::string& tokenizer_dir);

  const ExternalModelOptions& options() const { return opts_; }
  const tok::Tokenizer& tokenizer() const { return tok_; }
  const std::string& tokenizer_origin() const { return tokenizer_origin_; }  // for the log
  std::string chat_url() const { return opts_.base_url + "/chat/completions"; }

 private:
  ExternalModelOptions opts_;
  std::string tokenizer_origin_;  // before tok_: the constructor's load_tokenizer sets it
  tok::Tokenizer tok_;
};

class ExternalClient : public workflow::ModelClient {
 public:
  // `task` supplies rollout_args (temperature, max_tokens) over the model's defaults; may be null.
  ExternalClient(std::shared_ptr<const ExternalModel> model, const buffer::Task* task);

  std::vector<workflow::Sample> generate_ids(const std::vector<int32_t>& prompt_ids,
                                             const workflow::GenOptions& opt) override;
  // The prompt as the one user message of a chat (an API has no raw completion of our template).
  std::vector<workflow::Sample> generate(const std::string& prompt, const workflow::GenOptions& opt) override;
  std::vector<workflow::Sample> chat(const std::string& messages_json, const workflow::GenOptions& opt,
                                     const std::string& tools_json = "") override;
  std::vector<int32_t> apply_chat_template(const std::string& messages_json, bool add_generation_prompt,
                                           const std::string& tools_json = "",
                                           std::optional<bool> enable_thinking = std::nullopt) override;
  std::string render_chat_template(const std::string& messages_json, bool add_generation_prompt,
                                   const std::string& tools_json = "",
                                   std::optional<bool> enable_thinking = std::nullopt) override;
  std::vector<float> logprobs(const std::vector<int32_t>& tokens, double temperature = 1.0) override;
  const tok::Tokenizer& tokenizer() const override { return m_->tokenizer(); }
  std::vector<int32_t> eos_ids() const override { return {}; }
  int64_t model_version() const override { return 0; }
  int64_t max_model_len() const override { return m_->options().max_model_len; }
  bool cancelled() const override { return cancelled_.load(); }
  std::unique_ptr<workflow::OpenAIEndpoint> open_openai_endpoint() override;

  // Aborts requests in flight; later calls throw CancelledError. Thread-safe.
  void cancel() { cancelled_.store(true); }

 private:
  void check() const;

  std::shared_ptr<const ExternalModel> m_;
  const buffer::Task* task_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace trinity::explorer
