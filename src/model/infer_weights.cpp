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

static_assert(std::tuple_size_v<decltype(InferWeights::adapters)::value_type> == kLoraTargets);

size_t InferWeights::bytes() const {
  size_t b = base ? base->head.bytes() : 0;
  if (base)
    for (const auto& l : base->layers) b += l.qkv.bytes() + l.wo.bytes() + l.gate_up.bytes() + l.wd.bytes();
  for (const auto& layer : adapters)
    for (const auto& a : layer) b += a.a.bytes() + a.b.bytes();
  return b;
}

namespace {

std::shared_ptr<const InferWeights::Base> pack_base(const Transformer& m, tensor::PackDType dtype, bool merge) {
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
  std::vector<float> scratch[3];
  auto f32 = [&](const std::string& name, const tensor::Tensor& t, int slot) -> const float* {
    if (t.dtype() == tensor::DType::kF32 && !merge) return static_cast<const float*>(t.data());
    auto& buf = scratch[slot];
    if (static_cast<int64_t>(buf.size()) < t.numel()) buf.resize(static_cast<size_t>(t.numel()));
    if (merge)
      merged_weight(m, t, name, buf.data());
    else
      tensor::convert_to_f32(buf.data(), t.data(), t.dtype(), t.numel());
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
  auto b = std::make_shared<InferWeights::Base>();
  for (int64_t i = 0; i < cfg.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    b->layers.push_back(
        {stack({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"}),
         pack(p + "self_attn.o_proj.weight"), stack({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"}),
         pack(p + "mlp.down_proj.weight")});
  }
  b->head = pack(cfg.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
  return b;
}

}  // namespace

std::shared_ptr<const InferWeights> pack_infer_weights(const Transformer& m, tensor::PackDType dtype, LoraPacking lora,
                                                       const InferWeights* reuse) {
  TRINITY_ASSERT(m.head() == HeadKind::kLm, "pack_infer_weights needs the LM head");
  auto w = std::make_shared<InferWeights>();
  w->dtype = dtype;
  const bool adapted = m.lora_enabled();
  if (!adapted || lora == LoraPacking::kMerged) {
    w->lora_merged = adapted;
    w->base = pack_base(m, dtype, adapted);
    return w;
  }
  w->base_id = m.frozen_base_id();
  if (reuse && reuse->lora_unmerged() && reuse->dtype == dtype && w->base_id && reuse->base_id == w->base_id)
    w->base = reuse->base;
  else
    w->base = pack_base(m, dtype, false);
  // The adapters in fp32 whatever the base's dtype: A as is, B with the scale folded in.
  w->adapters.resize(static_cast<size_t>(m.config().num_hidden_layers));
  const float s = static_cast<float>(m.lora_config().scale());
  std::vector<float> sb;
  for_each_lora_adapter(m, [&](int64_t l, int t, const tensor::Tensor& A, const tensor::Tensor& B) {
    auto& ad = w->adapters[static_cast<size_t>(l)][static_cast<size_t>(t)];
    ad.a = tensor::PackedLinear(A.f32(), A.shape()[0], A.shape()[1], tensor::PackDType::kF32);
    sb.resize(static_cast<size_t>(B.numel()));
    for (int64_t i = 0; i < B.numel(); ++i) sb[static_cast<size_t>(i)] = s * B.f32()[i];
    ad.b = tensor::PackedLinear(sb.data(), B.shape()[0], B.shape()[1], tensor::PackDType::kF32);
  });
  return w;
}

}  // namespace trinity::model
