// Transformer: the decoder of Qwen2 / Qwen3 / Llama 3 in fp32 on CPU, forward and backward over a
// packed batch of variable-length sequences (no padding: N rows = sum of lengths), with one of
// two heads: the RL head (per-row logprob of a target token + entropy) or a value head (critic).
// Parameters and gradients live in two flat fp32 buffers laid out by param_specs(cfg), so the
// optimizer, clipping and zeroing are single passes; gradients are allocated on first use. Weights
// stored as bf16/f16 are upcast on load, unless the model holds its decoder layers' linear weights in
// bf16 (WeightStorage::kBF16, a frozen base under LoRA): those are widened one layer at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/lora.h"
#include "tensor/tensor.h"

namespace trinity::model {

struct InferWeights;

// B sequences packed into N rows. targets[n] is the token whose logprob row n predicts
// (-1: row n has no target and gets no logprob/entropy). A prompt several sequences share can be
// one sequence of its own that they continue (prefix[b] = its index; their positions go on from
// its length): it is computed once, and its rows collect the gradients of every continuation.
struct Batch {
  std::vector<int32_t> tokens;     // [N]
  std::vector<int32_t> positions;  // [N] 0-based within each sequence (after its prefix)
  std::vector<int64_t> seq_start;  // [B+1]
  std::vector<int32_t> targets;    // [N]
  std::vector<int64_t> prefix;     // [B] or empty: the sequence whose rows b's rows follow (-1: none)

  const int64_t* prefix_data() const { return prefix.empty() ? nullptr : prefix.data(); }
  int64_t rows() const { return static_cast<int64_t>(tokens.size()); }
  int64_t num_seqs() const { return static_cast<int64_t>(seq_start.size()) - 1; }
  // Every position but the last of each sequence predicts the next token.
  static Batch next_token(const std::vector<std::vector<int32_t>>& seqs);
};

enum class HeadKind { kLm, kValue };

// How the seven linear weights of every decoder layer (q/k/v/o_proj, gate/up/down_proj) are held.
// kBF16: in bf16 (a bf16 checkpoint's own values; an fp32 one is rounded on load), widened to fp32
// one layer at a time for the fp32 compute, so results equal an fp32 model holding the same values.
// They are frozen: such a model trains only LoRA adapters (no base gradients). Embeddings, norms,
// biases and the heads stay fp32 in params().
enum class WeightStorage { kF32, kBF16 };

// Inference: one sequence's new tokens in a step are rows [row_begin, row_end) of the step, at
// positions kv->len, kv->len + 1, ... (the caller reserved cache room for them and advances kv->len
// afterwards).
struct InferSeg {
  SeqKv* kv = nullptr;
  int64_t row_begin = 0, row_end = 0;
};

// Buffers an inference caller reuses across steps (one per engine thread).
struct InferScratch {
  std::vector<float> x, ln, q, k, v, att, gate, up, rstd, qrstd, krstd, hrows;
  std::vector<float> lora_h;  // [N, r]: x A^T of an unmerged adapter
  std::vector<int32_t> positions;
  std::vector<float> cos_t, sin_t;
  int64_t rope_positions = 0;
};

class Transformer {
 public:
  // share_base: a model of the same config, head and storage whose weights (fp32 and bf16-held)
  // this one uses too, instead of a copy (frozen LoRA bases: the trainer's actor and the engine's
  // snapshots of it). Copy on write: writing them through either (params(), param(), held(),
  // trainable_params() without LoRA, copy_weights_from, init_random) first gives it its own copy.
  explicit Transformer(const ModelConfig& cfg, HeadKind head = HeadKind::kLm,
                       WeightStorage storage = WeightStorage::kF32, const Transformer* share_base = nullptr);
  ~Transformer();
  Transformer(Transformer&&) noexcept;
  Transformer& operator=(Transformer&&) noexcept;

  // Loads config.json + safetensors from an HF directory (missing tensor / wrong shape: IoError).
  static Transformer load(const std::string& dir, HeadKind head = HeadKind::kLm,
                          WeightStorage storage = WeightStorage::kF32);
  // HF-style init: normal(0, std) for linear and embedding weights, zero biases, unit norms.
  void init_random(uint64_t seed, float std = 0.02f);
  // Writes an HF checkpoint directory (see save_checkpoint).
  void save(const std::string& dir, const SaveOptions& opts = {}) const;

  const ModelConfig& config() const { return cfg_; }
  HeadKind head() const { return head_; }
  const std::vector<ParamSpec>& param_specs() const { return specs_; }
  // The fp32 parameters (every one, unless some are held in bf16: then the others).
  int64_t num_params() const { return n_params_; }
  float* params() {  // this model's own copy (unshared first)
    own_params();
    return params_;
  }
  const float* params() const { return params_; }
  WeightStorage weight_storage() const { return storage_; }
  // The bf16-held layer weights (WeightStorage::kBF16; empty otherwise).
  int64_t num_held() const { return n_held_; }
  uint16_t* held();  // this model's own copy (unshared first)
  const uint16_t* held() const { return held_; }
  // Identity of a frozen base, the key for reusing its packed copy (pack_infer_weights): the
  // bf16-held storage of a model with LoRA adapters, which adapted_copy shares with the trainer's
  // actor (whose base never changes); null for any other model. Equal and non-null for two live
  // models: the same base weights.
  const void* frozen_base_id() const { return has_lora() ? held_ : nullptr; }
  // Copies every weight of `src` (same config and head; any storage: bf16 values widen exactly,
  // fp32 values round to nearest even into bf16-held slots).
  void copy_weights_from(const Transformer& src);
  float* grads() {
    ensure_grads();
    return grads_;
  }
  const float* grads() const { return grads_; }  // null until the first zero_grad()/backward()
  float* param(const std::string& name);         // an fp32 parameter; nullptr if absent or held in bf16
  float* grad(const std::string& name);
  // Views of every parameter (or gradient) under its HF name, for saving: F32, or BF16 for held ones.
  std::vector<tensor::Tensor> param_tensors() const;
  std::vector<tensor::Tensor> grad_tensors() const;
  void zero_grad();

  // Forward over the batch; keeps activations for backward. LM head: fills logprob/entropy with one
  // value per row whose target >= 0, in row order (logits scaled by inv_temp). Value head: fills
  // `values` with one value per row.
  void forward(const Batch& batch, std::vector<float>& logprob, std::vector<float>& entropy,
               float inv_temp = 1.0f);
  void forward_values(const Batch& batch, std::vector<float>& values);
  // Accumulates parameter gradients from d(loss)/d(logprob) and d(loss)/d(entropy) (LM head) of the
  // last forward. dentropy may be empty (zero).
  void backward(const std::vector<float>& dlogprob, const std::vector<float>& dentropy);
  void backward_values(const std::vector<float>& dvalues);

  // Inference step (no activations kept): runs the decoder over `tokens` [R], writes their K/V into
  // `cache`, and returns the logits [M, V] (temperature 1) of the rows listed in `logit_rows`.
  // Uses the same kernels as forward(), so logprobs computed from these logits match the trainer's.
  // With `packed` (model/infer_weights.h) the linear layers and the LM head read those copies.
  void forward_infer(const std::vector<int32_t>& tokens, const std::vector<InferSeg>& segs,
                     KvCache& cache, const std::vector<int64_t>& logit_rows,
                     std::vector<float>& logits, InferScratch& scratch,
                     const InferWeights* packed = nullptr) const;

  // The LM head keeps the forward's [M, V] logits for the backward (saving one GEMM) when they fit
  // in this many bytes (default 1 GiB); larger batches recompute them in chunks.
  void set_logits_cache_bytes(int64_t bytes);

  // LoRA (model/lora.h): adapters with `cfg` on its target linears (A Kaiming-uniform from `seed`, B
  // zero, as PEFT). From then on every base weight is frozen: its gradients are freed and never
  // computed; trainable_*() are the adapters.
  void add_lora(const LoraConfig& cfg, uint64_t seed);
  bool has_lora() const;
  const LoraConfig& lora_config() const;
  // The adapters' PEFT names and shapes (lora_A [r, in], lora_B [out, r] per module, layer-major).
  const std::vector<ParamSpec>& lora_specs() const;
  float* lora_param(const std::string& peft_name);  // nullptr if absent
  // Views of the adapters (or of their gradients, allocated at zero if needed), lora_specs order.
  std::vector<tensor::Tensor> lora_tensors(bool grads = false) const;
  // Off: forwards compute the base model without adapters (a LoRA run's reference policy).
  void set_lora_enabled(bool on);
  bool lora_enabled() const;  // has adapters and they are on
  // On: forwards apply lora_dropout (each forward a new mask, reproduced by its backward).
  void set_training(bool on);
  // What an optimizer updates: the adapters with LoRA, otherwise every weight.
  float* trainable_params();
  float* trainable_grads();
  int64_t num_trainable() const;

  // Activation checkpointing: forwards keep only each layer's input and the backward recomputes the
  // layer (same gradients, one layer's activations instead of all; ~1/3 more compute).
  void set_gradient_checkpointing(bool on);
  bool gradient_checkpointing() const;

  // Bytes of activation memory the last forward held.
  size_t activation_bytes() const;

 private:
  struct Impl;
  void bind(float* base, bool is_grad);
  void ensure_grads();
  void own_held();    // a private copy of shared bf16-held weights
  void own_params();  // a private copy of shared fp32 weights
  ModelConfig cfg_;
  HeadKind head_;
  WeightStorage storage_ = WeightStorage::kF32;
  std::vector<ParamSpec> specs_;
  std::vector<int64_t> offsets_;    // into params_/grads_, or into held_ where held_spec_[k]
  std::vector<uint8_t> held_spec_;  // [specs] 1: held in bf16
  int64_t n_params_ = 0, n_held_ = 0;
  float* params_ = nullptr;  // owned through params_owner_, possibly with other models
  std::shared_ptr<float> params_owner_;
  float* grads_ = nullptr;
  uint16_t* held_ = nullptr;  // owned through held_owner_, possibly with other models
  std::shared_ptr<uint16_t> held_owner_;
  std::unique_ptr<Impl> impl_;
};

// kBF16 when the model directory stores its weights in bf16 (held as stored: nothing is lost and
// every result equals an fp32 load), else kF32. For models whose layer weights are frozen or only
// read through packed copies: LoRA bases and rollout / serving models.
WeightStorage lossless_storage(const std::string& model_dir);

// RoPE tables [P, HS/2] for positions 0..P-1 as HF computes them (fp32 inv_freq, llama3 scaling).
void rope_tables(const ModelConfig& cfg, int64_t positions, std::vector<float>& cos_t,
                 std::vector<float>& sin_t);

}  // namespace trinity::model
