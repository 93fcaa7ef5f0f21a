// ModelClient: what a workflow sees of the rollout model (trinity-rft.md §5.2, DESIGN.md §2: the
// workflow layer reaches the engine only through this interface). Token-in / token-out: every call
// returns the exact prompt ids and sampled ids with their rollout logprobs, so workflows build
// experiences from ids, never by re-tokenizing text. Implementations: the explorer's engine-backed
// client (explorer/engine_client.h) and scripted fakes in tests. Calls are thread-safe. After the
// runner cancels an attempt (timeout), every call throws CancelledError.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/chat_history.h"

namespace trinity::workflow {

// Thrown by ModelClient calls once the attempt was cancelled (timeout / shutdown).
class CancelledError : public Error {
 public:
  explicit CancelledError(const std::string& msg) : Error("workflow", msg) {}
};

// Per-call sampling options; unset fields take the task's rollout_args, then model.* defaults.
struct GenOptions {
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k, max_tokens, min_tokens;
  int64_t n = 1;                           // samples of the same prompt (prompt KV shared)
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;           // stop strings
  std::vector<int32_t> stop_token_ids;     // in addition to EOS
  std::optional<bool> enable_thinking;     // chat template variable (Qwen3)
};

// One sample. prompt_ids + ids is the whole sequence; logprobs[i] = log_softmax(z/T)[ids[i]].
struct Sample {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> ids;        // sampled ids, including the stop/EOS token that ended it
  std::vector<float> logprobs;     // [ids.size()]
  std::string text;                // decoded response (stop string removed, special tokens skipped)
  std::string finish_reason;       // "stop" | "length" | "abort" | ...
  int64_t model_version = 0;
  std::map<std::string, double> metrics;  // copied into the experience's metrics (external APIs: usage/*)
};

// An OpenAI-compatible endpoint of the rollout model for one run (command_workflow; Trinity's
// enable_openai_api): the same API as `trinity serve`, on loopback. Every call made with `api_key`
// is recorded into `history`; requests with another key get 401. Sampling fields a request leaves
// out come from the task's rollout_args and model.* defaults. Destroying the endpoint revokes the
// key and cancels its requests still in flight.
class OpenAIEndpoint {
 public:
  virtual ~OpenAIEndpoint() = default;
  std::string base_url;  // "http://127.0.0.1:<port>/v1"
  std::string api_key;   // a per-run secret
  std::string model;     // the model id to send (any name is accepted)
  std::shared_ptr<tok::ChatHistory> history;
};

class ModelClient {
 public:
  virtual ~ModelClient() = default;

  // n samples continuing `prompt_ids`.
  virtual std::vector<Sample> generate_ids(const std::vector<int32_t>& prompt_ids, const GenOptions& opt) = 0;
  // Plain-text prompt (tokenized as is, special tokens recognised, no chat template).
  virtual std::vector<Sample> generate(const std::string& prompt, const GenOptions& opt) = 0;
  // messages_json: JSON array of {"role","content",...}; tools_json: JSON array or "". The chat
  // template is applied with add_generation_prompt = true.
  virtual std::vector<Sample> chat(const std::string& messages_json, const GenOptions& opt,
                                   const std::string& tools_json = "") = 0;
  // Token ids of the chat template rendering (special tokens recognised).
  virtual std::vector<int32_t> apply_chat_template(const std::string& messages_json, bool add_generation_prompt,
                                                   const std::string& tools_json = "",
                                                   std::optional<bool> enable_thinking = std::nullopt) = 0;
  // The rendered template text (for computing the text of a turn delta).
  virtual std::string render_chat_template(const std::string& messages_json, bool add_generation_prompt,
                                           const std::string& tools_json = "",
                                           std::optional<bool> enable_thinking = std::nullopt) = 0;
  // Logprobs of tokens[1..L-1] given their prefixes at `temperature` ([L-1]).
  virtual std::vector<float> logprobs(const std::vector<int32_t>& tokens, double temperature = 1.0) = 0;

  virtual const tok::Tokenizer& tokenizer() const = 0;
  virtual std::vector<int32_t> eos_ids() const = 0;
  virtual int64_t model_version() const = 0;
  virtual int64_t max_model_len() const = 0;
  // True once the runner cancelled this attempt; long-running workflows should poll it.
  virtual bool cancelled() const = 0;

  // A new endpoint with its own key and history (one per run). UnsupportedError where the client
  // has none (test fakes).
  virtual std::unique_ptr<OpenAIEndpoint> open_openai_endpoint() {
    throw UnsupportedError("workflow", "this model client has no OpenAI endpoint");
  }
  // The calls made through generate / chat of this client when the rollout model records history
  // (explorer.rollout_model.enable_history); `clear` empties it (Trinity's
  // extract_experience_from_history). Empty when history is off.
  virtual std::vector<tok::RecordedCall> history(bool clear = true) {
    (void)clear;
    return {};
  }
};

}  // namespace trinity::workflow
