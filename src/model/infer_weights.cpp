// Packing of a Transformer's linear weights for inference (see infer_weights.h). Weights are found
// by their HF names in param_specs order, so this needs no access to the model's internals.
#include "model/infer_weights.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "model/checkpoint.h"
#include "model/lora.h"
#include "model/transformer.h"

namespace trinity::model {

size_t InferWeights::bytes() const {
  size_t b = head.bytes();
  for (const auto& l : layers)
    b += l.qkv.bytes() + l.wo.bytes() + l.gate_up.bytes() + l.wd.bytes();
  return b;
}

std::shared_ptr<const InferWeights> pack_infer_weights(const Transformer& m, tensor::PackDType dtype) {
  TRINITY_ASSERT(m.head() == HeadKind::kLm, "pack_infer_weights needs the LM head");
  const auto& cfg = m.config();
  const auto& specs = m.param_specs();
  const auto tensors = m.param_tensors();
  auto get = [&](const std::string& name) -> const tensor::Tensor& {
    for (size_t k = 0; k < specs.size(); ++k)
      if (specs[k].name == name) return tensors[k];
    throw ValueError("model", strcat("pack_infer_weights: no parameter ", name));
  };
  // fp32 values of a weight: a view, or the widened / merged values of a bf16-held or adapted one in
  // scratch buffer `slot` (reused across layers: no allocation and page faults per weight).
  const bool lora = m.lora_enabled();
  std::vector<float> scratch[3];
  auto f32 = [&](const std::string& name, const tensor::Tensor& t, int slot) -> const float* {
    if (t.dtype() == tensor::DType::kF32 && !lora) return static_cast<const float*>(t.data());
    auto& buf = scratch[slot];
    if (static_cast<int64_t>(buf.size()) < t.numel()) buf.resize(static_cast<size_t>(t.numel()));
    merged_weight(m, t, name, buf.data());
    return buf.data();
  };
  auto pack = [&](const std::string& name) {
    const auto& t = get(name);
    TRINITY_ASSERT(t.shape().size() == 2, "linear weight must be 2-D: ", name);
    return tensor::PackedLinear(f32(name, t, 0), t.shape()[0], t.shape()[1], dtype);
  };
  auto stack = [&](const std::vector<std::string>& names) {
    TRINITY_ASSERT(names.size() <= 3, "stack of more than 3 weights");
    std::vector<tensor::PackedLinear::Part> parts;
    int64_t ic = -1;
    for (const auto& name : names) {
      const auto& t = get(name);
      TRINITY_ASSERT(t.shape().size() == 2, "linear weight must be 2-D: ", name);
      TRINITY_ASSERT(ic < 0 || t.shape()[1] == ic, "fused weights need one input size: ", name);
      ic = t.shape()[1];
      parts.push_back({f32(name, t, static_cast<int>(parts.size())), t.shape()[0]});
    }
    return tensor::PackedLinear(parts, ic, dtype);
  };
  auto w = std::make_shared<InferWeights>();
  w->dtype = dtype;
  w->lora_merged = lora;
  for (int64_t i = 0; i < cfg.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    w->layers.push_back({stack({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                                p + "self_attn.v_proj.weight"}),
                         pack(p + "self_attn.o_proj.weight"),
                         stack({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"}),
                         pack(p + "mlp.down_proj.weight")});
  }
  w->head = pack(cfg.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
  return w;
}

}  // namespace trinity::model
