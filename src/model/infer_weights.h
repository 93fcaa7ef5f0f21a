// Inference copies of a Transformer's linear weights (q/k/v/o, MLP gate/up/down, LM head) in the
// panel layout of tensor/packed_linear.h, fp32 or bf16. The generation engine builds one per weight
// version and passes it to forward_infer. q/k/v and gate/up are fused stacks (one pass over the
// activation rows each, tensor::packed_linear_parts); norms, biases and the embedding come from the
// model's fp32 parameters. fp32 panels hold the same values as the model (only the summation order
// of the GEMMs differs); bf16 panels are rounded copies (half the bytes per decode step).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "tensor/packed_linear.h"

namespace trinity::model {

class Transformer;

// How a model's enabled LoRA adapters reach the packed copy.
enum class LoraPacking {
  kMerged,    // W + s·B A packed per version: plain-model decode speed, the whole copy repacked per sync
  kUnmerged,  // the base packed once and shared by every version with the same frozen base; each
              // version packs only A and s·B, and forward_infer adds s·(x A^T) B^T after each linear
};

struct InferWeights {
  struct Layer {
    tensor::PackedLinear qkv;  // fused stack: parts q [NH*HS, C], k [NKV*HS, C], v [NKV*HS, C]
    tensor::PackedLinear wo;
    tensor::PackedLinear gate_up;  // fused stack: parts gate [I, C], up [I, C]
    tensor::PackedLinear wd;
  };
  struct Base {
    std::vector<Layer> layers;
    tensor::PackedLinear head;  // [V, C]
  };
  // One unmerged adapter: a = A [r, in], b = s·B [out, r], both fp32 (empty: the module has none).
  struct Adapter {
    tensor::PackedLinear a, b;
  };
  tensor::PackDType dtype = tensor::PackDType::kF32;
  bool lora_merged = false;  // packed from a model with enabled LoRA adapters, merged in
  std::shared_ptr<const Base> base;
  // Unmerged LoRA: [layer][module] in lora_module_name order (q k v o gate up down); empty: none.
  std::vector<std::array<Adapter, 7>> adapters;
  const void* base_id = nullptr;  // Transformer::frozen_base_id() of the model `base` was packed from
  bool lora_unmerged() const { return !adapters.empty(); }
  size_t bytes() const;  // base and adapters
};

// Packs every linear weight of `m` (an LM-head model). With enabled LoRA adapters: kMerged packs
// W + s·B A (model::merged_weight: the values merged_copy(m) has); kUnmerged packs the base as
// held plus the adapters apart, and takes `reuse`'s packed base instead of packing one when `reuse`
// was packed unmerged, in `dtype`, from a model with the same non-null frozen_base_id(). Parallel;
// a whole copy takes ~1-2 s for 0.5B parameters, the adapters alone a few ms.
std::shared_ptr<const InferWeights> pack_infer_weights(const Transformer& m, tensor::PackDType dtype,
                                                       LoraPacking lora = LoraPacking::kMerged,
                                                       const InferWeights* reuse = nullptr);

}  // namespace trinity::model
