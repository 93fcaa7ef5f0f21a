// Inference copies of a Transformer's linear weights (q/k/v/o, MLP gate/up/down, LM head) in the
// panel layout of tensor/packed_linear.h, fp32 or bf16. The generation engine builds one per weight
// version and passes it to forward_infer. q/k/v and gate/up are fused stacks (one pass over the
// activation rows each, tensor::packed_linear_parts); norms, biases and the embedding come from the
// model's fp32 parameters. fp32 panels hold the same values as the model (only the summation order
// of the GEMMs differs); bf16 panels are rounded copies (half the bytes per decode step).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tensor/packed_linear.h"

namespace trinity::model {

class Transformer;

struct InferWeights {
  struct Layer {
    tensor::PackedLinear qkv;  // fused stack: parts q [NH*HS, C], k [NKV*HS, C], v [NKV*HS, C]
    tensor::PackedLinear wo;
    tensor::PackedLinear gate_up;  // fused stack: parts gate [I, C], up [I, C]
    tensor::PackedLinear wd;
  };
  tensor::PackDType dtype = tensor::PackDType::kF32;
  bool lora_merged = false;  // packed from a model with enabled LoRA adapters, merged in
  std::vector<Layer> layers;
  tensor::PackedLinear head;  // [V, C]
  size_t bytes() const;
};

// Packs every linear weight of `m` (an LM-head model), with its enabled LoRA adapters merged in
// (model::merged_weight: the values merged_copy(m) has). Parallel; ~1-2 s for 0.5B parameters.
std::shared_ptr<const InferWeights> pack_infer_weights(const Transformer& m, tensor::PackDType dtype);

}  // namespace trinity::model
