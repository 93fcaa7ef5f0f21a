// Private to src/model: a Transformer's LoRA adapters (model/lora.h) and their forward/backward
// on one adapted linear, called by the decoder's forward and backward after the base linear.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/lora.h"

namespace trinity::model {

struct LoraLinear {
  float *a = nullptr, *b = nullptr;    // A [r, in], B [out, r] (a == nullptr: not adapted)
  float *da = nullptr, *db = nullptr;  // their gradients (null until allocated)
  int64_t in = 0, out = 0;
  float* h = nullptr;  // [N, r] = dropout(x) A^T of the last forward (kept for the backward)
};

struct LoraState {
  LoraConfig cfg;
  float scale = 1.0f;            // alpha / r
  std::vector<ParamSpec> specs;  // PEFT names, layer-major, A then B per module
  std::vector<int64_t> offsets;
  std::vector<float> params, grads;  // flat; grads empty until the first backward
  std::vector<std::array<LoraLinear, kLoraTargets>> layers;
  bool enabled = true;    // off: forwards compute the base model
  bool training = false;  // training forwards apply dropout
  uint64_t seed = 0;
  uint64_t forward_id = 0;     // dropout stream of the last training forward
  bool dropout_now = false;    // the last forward applied dropout (the backward must too)
  std::vector<float> hbuf;     // the h of every adapted linear: [L or 1][7][N, r]
  std::vector<float> tmp, dh;  // [N, max in], [N, r]
  int64_t cap_rows = 0;

  LoraState(const ModelConfig& mc, const LoraConfig& lc);
  bool active() const { return enabled; }
  void ensure_grads();
  // Points every LoraLinear::h at hbuf for n rows; `layer_slots`: L, or 1 when checkpointing
  // recomputes one layer at a time.
  void prepare(int64_t n, int64_t layer_slots);
  // Starts a forward: draws the dropout stream when training with dropout.
  void begin_forward();
  // y [N, out] += s · (dropout(x) A^T) B^T for module t of layer l (no-op when not adapted / off).
  void forward(size_t l, int t, float* y, const float* x, int64_t n);
  // From dy [N, out]: dA, dB += their gradients, dx [N, in] += the adapter path's input gradient.
  void backward(size_t l, int t, float* dx, const float* dy, const float* x, int64_t n);

 private:
  const float* dropped_input(size_t l, int t, const float* x, int64_t n);  // x, or tmp = dropout(x)
};

}  // namespace trinity::model
