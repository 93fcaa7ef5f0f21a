// Private to src/model: the Transformer's implementation state, shared by the training forward /
// backward (transformer.cpp) and the inference forward (transformer_infer.cpp).
#pragma once

#include <vector>

#include <memory>

#include "model/lora_impl.h"
#include "model/transformer.h"

namespace trinity::model {

struct LayerParams {
  float *ln1, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *qn, *kn, *ln2, *wg, *wu, *wd;
};

// Saved activations of one layer ([N, *] rows).
struct LayerActs {
  float* x;      // [N, C] layer input (residual stream)
  float* rstd1;  // [N]
  float* ln1;    // [N, C]
  float* qlin;   // [N, NH*HS] pre q-norm (qwen3 only)
  float* klin;   // [N, NKV*HS] pre k-norm (qwen3 only)
  float* qrstd;  // [N*NH]
  float* krstd;  // [N*NKV]
  float* q;      // [N, NH*HS] after norm + rope
  float* k;      // [N, NKV*HS]
  float* v;      // [N, NKV*HS]
  float* att;    // [N, NH*HS]
  float* lse;    // [N, NH]
  float* xmid;   // [N, C] after the attention residual
  float* rstd2;  // [N]
  float* ln2;    // [N, C]
  float* gate;   // [N, I]
  float* up;     // [N, I]
  float* hmlp;   // [N, I]
};

// A layer's bf16-held linear weights (WeightStorage::kBF16).
struct HeldLayer {
  const uint16_t *wq, *wk, *wv, *wo, *wg, *wu, *wd;
};

struct Transformer::Impl {
  std::vector<LayerParams> lp;  // held linear weights: null here, see layer()
  std::vector<LayerParams> lg;  // gradients, same layout
  std::vector<HeldLayer> held;  // [L] with WeightStorage::kBF16, else empty
  std::vector<float> widened;   // one layer's held weights in fp32
  LayerParams wl{};             // lp[widened_layer] with its linear weights in `widened`
  int64_t widened_layer = -1;
  float *wte = nullptr, *lnf = nullptr, *whead = nullptr, *vw = nullptr, *vb = nullptr;
  float *dwte = nullptr, *dlnf = nullptr, *dwhead = nullptr, *dvw = nullptr, *dvb = nullptr;

  // Activation arena.
  std::vector<float> arena;
  int64_t cap_rows = 0;
  std::vector<LayerActs> acts;
  float *xf = nullptr, *rstdf = nullptr, *lnf_out = nullptr;  // [N,C], [N], [N,C]
  // Backward scratch.
  std::vector<float> scratch;
  float *dx = nullptr, *dln = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr, *datt = nullptr,
        *dgate = nullptr, *dup = nullptr, *dh = nullptr;

  // Last forward.
  Batch batch;
  std::vector<int64_t> head_rows;  // rows with target >= 0
  std::vector<int32_t> head_targets;
  std::vector<float> hm, lse_head, ent_head;  // [M, C], [M], [M]
  std::vector<float> kept_logits;             // [M, V] when within logits_cache_bytes
  bool logits_kept = false;
  int64_t logits_cache_bytes = int64_t{1} << 30;
  float inv_temp = 1.0f;
  bool have_forward = false;

  std::vector<float> cos_t, sin_t;
  int64_t rope_positions = 0;

  // LoRA adapters (null: none) and activation checkpointing (only each layer's input x is kept;
  // the backward recomputes the layer's forward from it into one shared set of activations).
  std::unique_ptr<LoraState> lora;
  bool checkpointing = false;
  bool arena_checkpointed = false;  // the arena's current layout

  // Layer l's parameters for compute: lp[l], or with held weights widened into `widened` (the last
  // widened layer is reused: the backward after a checkpointed recompute widens nothing).
  const LayerParams& layer(const ModelConfig& cfg, size_t l);
  void prepare(const ModelConfig& cfg, const Batch& b);
  void layer_forward(const ModelConfig& cfg, size_t l);
  void body_forward(const ModelConfig& cfg);
  void body_backward(const ModelConfig& cfg);  // dlnf_grad: d(loss)/d(final norm output) in dln
};

}  // namespace trinity::model
