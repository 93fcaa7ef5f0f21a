// Generation engine: one scheduler thread owns the model weights and the paged KV cache and runs
// continuous batching (requests join and leave the running batch at every step; the prefills of
// new requests and one decode row per running sample go through one batched forward). Callers
// submit requests from any thread and wait on a handle or receive streamed events.
// Admission reserves KV pages for the prompt plus every sample's max_tokens, so an admitted request
// always finishes; one that does not fit waits, and one that can never fit fails with a clear error.
// n samples of a prompt share its pages (prefill once). Weights are swapped between steps
// (SwapPolicy). Every completion carries the weight version that produced it.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/sampling.h"
#include "model/infer_weights.h"
#include "model/transformer.h"

namespace trinity::tok {
class Tokenizer;
}

namespace trinity::engine {

struct Completion {
  std::vector<int32_t> token_ids;  // sampled ids, including the stop token that ended generation
  std::vector<float> logprobs;     // one per token_ids entry
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs;  // when requested
  std::string text;                // decoded (stop string and what follows removed); needs a tokenizer
  std::string finish_reason;       // "stop", "length", "abort", "cancelled", "timeout", "error"
  int64_t model_version = 0;
};

struct GenerateResult {
  std::vector<int32_t> prompt_ids;
  std::vector<Completion> completions;  // n of them, in sample order
  std::string error;                    // non-empty when the request failed (finish_reason "error")
};

// Streamed to a request's callback from the scheduler thread (keep it short; don't block).
struct StreamEvent {
  int64_t index = 0;            // which of the n samples
  int32_t token = -1;           // -1 for a final event without a new token
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // top alternatives (when top_logprobs > 0)
  std::string text_delta;       // UTF-8 safe increment
  bool finished = false;
  std::string finish_reason;
};
using StreamCallback = std::function<void(const StreamEvent&)>;

class Request;

// Handle to a submitted request: wait for it, or cancel it.
class RequestHandle {
 public:
  explicit RequestHandle(std::shared_ptr<Request> r) : r_(std::move(r)) {}
  // Blocks until the request finishes (all samples done, cancelled, timed out or failed).
  GenerateResult wait();
  // Waits at most `timeout`; returns false if still running.
  bool wait_for(std::chrono::milliseconds timeout);
  void cancel();
  bool done() const;

 private:
  std::shared_ptr<Request> r_;
};

enum class SwapPolicy {
  kFinish,  // running requests finish on the old weights; new ones wait for the swap
  kAbort,   // running requests end with finish_reason "abort" and the swap happens at once
};

// How the engine stores the weights its linear layers read (model/infer_weights.h).
enum class WeightFormat {
  kF32,        // the model's own fp32 weights (no extra memory; slowest decode kernels)
  kF32Packed,  // an fp32 panel-packed copy (+1x weight memory): same values, logprobs match the trainer
  kBF16,       // a bf16 panel-packed copy (+0.5x weight memory): ~2x faster memory-bound decode, but
               // logits differ from the fp32 trainer's by ~1e-2, so logprobs do not match to 1e-4
};

struct EngineOptions {
  int64_t kv_cache_bytes = int64_t{1} << 30;
  int64_t page_size = 16;
  int64_t max_model_len = 0;        // 0: the model's max_position_embeddings
  // Prompt tokens prefilled per step; a longer prompt is prefilled in chunks over several steps,
  // each batched with the running sequences' decode rows (decode never stalls behind a prefill).
  int64_t max_prefill_tokens = 512;
  int64_t max_running = 256;        // samples decoding at once
  SwapPolicy swap_policy = SwapPolicy::kFinish;
  WeightFormat weight_format = WeightFormat::kF32Packed;
  // A model with LoRA adapters (a LoRA trainer's snapshot; model/infer_weights.h): kUnmerged packs
  // the base once and, at each update_weights with the same frozen base, only the adapters, which
  // every linear then adds (s·(x A^T) B^T); kMerged repacks W + s·B A whole at each update.
  model::LoraPacking lora_packing = model::LoraPacking::kUnmerged;
  // Prefix caching: full KV pages of prompts are kept by content after their prefill and reused by
  // later prompts that start with the same tokens (multi-turn conversations, shared system prompts,
  // GRPO repeats); cache-only pages are evicted LRU when admission or decode needs pages, and all are
  // dropped on a weight swap. Logprobs are bitwise the same with it on or off (batch-invariant kernels).
  bool prefix_cache = true;
};

struct EngineStats {
  int64_t steps = 0, waiting = 0, running = 0, finished = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t kv_pages_total = 0;
  int64_t kv_pages_free = 0;  // free pages plus cached pages no request uses (evictable on demand)
  // Prefix cache: prompt tokens looked up / found cached (their prefill skipped), pages it holds now,
  // pages evicted to make room.
  int64_t prefix_cache_query_tokens = 0, prefix_cache_hit_tokens = 0;
  int64_t prefix_cache_pages = 0, prefix_cache_evictions = 0;
  int64_t model_version = 0;
  // Queue time of admitted requests, from submit() to admission (KV pages reserved, prefill next):
  // a Prometheus-style histogram (queue_le[i] counts waits <= kQueueBuckets[i] seconds, cumulative),
  // the sum of the waits and their count. Requests cancelled or failed while waiting are not counted.
  static constexpr std::array<double, 12> kQueueBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                           0.25,  0.5,   1.0,  2.5,   5.0,  10.0};
  std::array<int64_t, 12> queue_le{};
  double queue_seconds_sum = 0;
  int64_t queue_count = 0;
};

class Engine {
 public:
  // `tokenizer` may be null: then stop strings are refused and completions have no text.
  Engine(std::shared_ptr<const model::Transformer> model, int64_t version,
         std::shared_ptr<const tok::Tokenizer> tokenizer, EngineOptions opts = {});
  ~Engine();  // stops the scheduler; unfinished requests end with finish_reason "abort"
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates (ValueError naming the field) and queues the request. `deadline` 0 = none.
  RequestHandle submit(std::vector<int32_t> prompt, SamplingParams params,
                       StreamCallback on_event = {},
                       std::chrono::milliseconds deadline = std::chrono::milliseconds(0));
  GenerateResult generate(std::vector<int32_t> prompt, const SamplingParams& params);

  // Installs new weights (same architecture) as `version`, between steps, per the swap policy.
  // Returns once the swap has happened.
  void update_weights(std::shared_ptr<const model::Transformer> model, int64_t version);
  int64_t model_version() const;
  // The weights the engine decodes with now and their packed copy (null for WeightFormat::kF32), as
  // one consistent pair.
  std::pair<std::shared_ptr<const model::Transformer>, std::shared_ptr<const model::InferWeights>> current() const;
  EngineStats stats() const;
  const model::ModelConfig& config() const { return cfg_; }
  int64_t max_model_len() const { return max_len_; }
  std::vector<int32_t> eos_ids() const { return eos_; }

 private:
  struct Impl;
  void loop();
  model::ModelConfig cfg_;
  int64_t max_len_ = 0;
  std::vector<int32_t> eos_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

}  // namespace trinity::engine
