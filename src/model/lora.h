// LoRA adapters on the decoder's linear layers, in PEFT's layout and naming:
//   y = x W^T + b + s · (dropout(x) A^T) B^T,   A [r, in], B [out, r], s = lora_alpha / r
// on the target modules (q/k/v/o_proj, gate/up/down_proj; "all-linear" = all seven, as PEFT, which
// never adapts lm_head). A model with adapters has every base weight frozen: no base gradients, no
// optimizer state; the adapters are the trainable parameters (Transformer::trainable_*).
// Initialisation as PEFT's init_lora_weights=True: A Kaiming-uniform (a = sqrt(5): U(±1/sqrt(in))),
// B zero, so a new adapter leaves the model unchanged.
// On disk: a PEFT adapter directory (adapter_config.json + adapter_model.safetensors, tensors named
// base_model.model.<hf module>.lora_A.weight / lora_B.weight), loadable by peft unchanged.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace trinity::model {

class Transformer;

inline constexpr int kLoraTargets = 7;
// PEFT module names, in this order: q_proj k_proj v_proj o_proj gate_proj up_proj down_proj.
const char* lora_module_name(int t);
// The module's path under model.layers.<i>: "self_attn.q_proj", ..., "mlp.down_proj".
const char* lora_module_path(int t);

struct LoraConfig {
  int64_t rank = 0;  // 0: no adapters
  double alpha = 32.0;
  double dropout = 0.0;  // on the adapter input, training forwards only
  std::vector<std::string> target_modules{"all-linear"};
  std::vector<std::string> exclude_modules;

  bool enabled() const { return rank > 0; }
  double scale() const { return alpha / static_cast<double>(rank); }
  // Which of the seven modules get adapters (ConfigError naming an unknown module, or when the
  // targets minus the exclusions leave none).
  std::array<bool, kLoraTargets> targets() const;
  // Throws ConfigError for a rank < 1, alpha <= 0, dropout outside [0, 1), a bad module.
  void validate() const;
  bool operator==(const LoraConfig&) const = default;
};

// The PEFT adapter directory's files.
inline constexpr const char* kAdapterConfigFile = "adapter_config.json";
inline constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";

// Reads <dir>/adapter_config.json (IoError if missing or not JSON; UnsupportedError naming the key
// for PEFT features trinity does not implement: DoRA, rsLoRA, rank/alpha patterns, bias, modules_to_save,
// layers_to_transform, fan_in_fan_out).
LoraConfig read_adapter_config(const std::string& dir);
bool is_adapter_dir(const std::string& dir);

// Writes a PEFT adapter directory of the model's adapters (atomically: <dir>.tmp.<pid>, renamed).
// base_model names the base in adapter_config.json (base_model_name_or_path).
void save_adapter(const Transformer& m, const std::string& dir, const std::string& base_model = "");

// Gives `m` adapters with the directory's config and weights (every tensor the config implies must
// be present with its shape: IoError naming the file and tensor otherwise). `m` must have none yet.
void load_adapter(Transformer& m, const std::string& dir);

// A copy of `m` without adapters whose weights are W + s · B A for every adapted linear: the model
// `m` computes (without dropout), as one plain checkpoint. Without adapters: a plain copy.
Transformer merged_copy(const Transformer& m);

// A copy of `m` as it is held (same WeightStorage) with its adapters (enabled, not training): what the
// rollout engine takes after a sync. A LoRA base (fp32 and bf16-held weights) is shared with `m`, not
// copied: it is frozen (copy on write, see Transformer's share_base).
// pack_infer_weights packs the base and the adapters apart (LoraPacking::kUnmerged, the engine's
// default: the packed base is reused while the base is the same) or merged (the same values as
// merged_copy's).
Transformer adapted_copy(const Transformer& m);

// Calls fn(layer, module (lora_module_name order), A [r, in], B [out, r]) for every adapter of `m`
// (views of its weights), layer-major; nothing without adapters.
void for_each_lora_adapter(const Transformer& m,
                           const std::function<void(int64_t, int, const tensor::Tensor&, const tensor::Tensor&)>& fn);

// Writes to out [w.numel()] the fp32 values of weight `name` (= w, a view of m's parameter) that `m`
// computes: W (widened when bf16-held), plus s · B A when the linear is adapted and the adapters are
// enabled. Exactly merged_copy's values.
void merged_weight(const Transformer& m, const tensor::Tensor& w, const std::string& name, float* out);

// Writes what merged_copy(m).save(dir, opts) writes (the same bytes) without the merged copy: each
// adapted weight is merged into a temporary fp32 tensor while it is written, one at a time.
void save_merged(const Transformer& m, const std::string& dir, const SaveOptions& opts = {});

}  // namespace trinity::model
