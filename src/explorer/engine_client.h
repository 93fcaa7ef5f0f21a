// The ModelClient workflows use in the explorer: requests go to the shared generation Engine with
// the task's rollout defaults, chat templates come from the model's tokenizer_config, and every
// call of one attempt can be cancelled at once (the runner's timeout). One EngineClient per attempt;
// the RolloutModel (engine + tokenizer + chat formatter + defaults) is shared by all runners.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "buffer/experience.h"
#include "engine/engine.h"
#include "explorer/runner_pool.h"
#include "tokenizer/chat.h"
#include "workflow/model_client.h"

namespace trinity::explorer {

class AgentServer;

// model.* rollout defaults (Trinity GenerationConfig, filled from the config).
struct RolloutDefaults {
  double temperature = 1.0, top_p = 1.0, repetition_penalty = 1.0;
  int64_t top_k = -1;
  int64_t max_tokens = 128;  // model.max_response_tokens
  int64_t min_tokens = 0;
  std::optional<bool> enable_thinking;
  // model.enable_prompt_truncation with max_prompt_tokens > 0: a chat / generate prompt longer than
  // max_prompt_tokens is not generated from; its n samples are Trinity's masked dummies (below).
  bool prompt_truncation = false;
  int64_t max_prompt_tokens = 0;
};

// What the runners share: the engine and the model's tokenizer files.
struct RolloutModel {
  std::shared_ptr<engine::Engine> engine;
  std::shared_ptr<const tok::ChatFormatter> chat;  // tokenizer + chat template
  std::vector<int32_t> stop_ids;                    // tokenizer eos etc. (besides the model's EOS)
  RolloutDefaults defaults;
  std::string model_dir;
  bool record_history = false;  // explorer.rollout_model.enable_history: clients record their calls
  // The loopback OpenAI endpoint for agents (command_workflow), started on first use.
  std::shared_ptr<AgentServer> agent_server() const;
  // Loads tokenizer files from `dir` for a model whose vocabulary is `model_vocab`. A custom
  // chat template (model.custom_chat_template) replaces the tokenizer_config one when non-empty.
  static std::shared_ptr<const tok::ChatFormatter> load_chat(const std::string& dir, int64_t model_vocab,
                                                              const std::string& custom_template,
                                                              std::vector<int32_t>* stop_ids);
  // Swaps the engine's weights (between its steps) and remembers them for prompt logprobs.
  void set_weights(std::shared_ptr<const model::Transformer> w, int64_t version) const;
  // The weights set last (by set_weights or at construction through init_weights).
  std::shared_ptr<const model::Transformer> weights() const;
  void init_weights(std::shared_ptr<const model::Transformer> w) const;

 private:
  mutable std::mutex mu_;
  mutable std::shared_ptr<const model::Transformer> weights_;
  mutable std::shared_ptr<AgentServer> agent_;
};

class EngineClient : public workflow::ModelClient {
 public:
  // `task` supplies rollout_args overrides (may be null); `seed` makes sampling reproducible
  // per attempt (each request draws seed, seed+1, ...).
  EngineClient(std::shared_ptr<const RolloutModel> model, const buffer::Task* task, std::optional<uint64_t> seed);

  std::vector<workflow::Sample> generate_ids(const std::vector<int32_t>& prompt_ids,
                                             const workflow::GenOptions& opt) override;
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
  const tok::Tokenizer& tokenizer() const override;
  std::vector<int32_t> eos_ids() const override;
  int64_t model_version() const override;
  int64_t max_model_len() const override;
  bool cancelled() const override { return cancelled_.load(); }
  std::unique_ptr<workflow::OpenAIEndpoint> open_openai_endpoint() override;
  std::vector<tok::RecordedCall> history(bool clear = true) override;

  // Cancels in-flight requests and the endpoints this client opened; later calls throw
  // CancelledError. Thread-safe.
  void cancel();

 private:
  engine::SamplingParams params(const workflow::GenOptions& opt) const;
  tok::ChatOptions chat_options(bool add_generation_prompt, const std::string& tools_json,
                                std::optional<bool> enable_thinking) const;
  void check() const;
  // Trinity's overlong-prompt dummies: n samples with the first max_prompt_tokens ids as prompt, the
  // next one as the only "response" id (logprob 0), text "[This experience is masked out due to
  // overlong prompt]" and finish_reason "prompt_truncated" (experience_from_sample masks them out).
  // Empty when the prompt fits or truncation is off.
  std::vector<workflow::Sample> overlong_prompt(const std::vector<int32_t>& prompt_ids,
                                                const workflow::GenOptions& opt);

  std::shared_ptr<const RolloutModel> keep_;
  const RolloutModel& m_;
  const buffer::Task* task_;
  std::optional<uint64_t> seed_;
  // Requests made, for the fallback seed of a request without one (seed_ + 7919 * call). Atomic:
  // concurrent repeats share the client. Their order (so which seed a repeat gets) then depends on
  // timing; workflows that pass GenOptions::seed (every built-in one) are not affected.
  std::atomic<uint64_t> calls_{0};
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::vector<engine::RequestHandle> inflight_;
  std::vector<std::string> endpoint_keys_;  // keys of the endpoints opened (closed on cancel)
  tok::ChatHistory history_;                // calls recorded when the model records history
};

// The runner pool's client factory over local engines: an EngineClient on `model` with the attempt's
// seed, and one per auxiliary model seeded seed + 7·(i + 1), as the explorer gives them; cancel()
// cancels them all.
ClientFactory engine_client_factory(std::shared_ptr<const RolloutModel> model,
                                    std::vector<std::shared_ptr<const RolloutModel>> auxiliary);

}  // namespace trinity::explorer
