// ModelConfig: the fields of a Hugging Face config.json that trinity's transformer needs, for the
// families qwen2 (q/k/v bias), qwen3 (per-head q/k RMSNorm) and llama (incl. llama3 rope scaling).
// Unknown model_type or unsupported option -> ConfigError naming it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trinity::model {

enum class Arch { kQwen2, kQwen3, kLlama };

const char* arch_name(Arch a);  // "qwen2", "qwen3", "llama" (HF model_type)
Arch arch_from_name(const std::string& name);  // throws ConfigError listing valid names

struct RopeScaling {
  std::string type;  // "" (none) or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  Arch arch = Arch::kQwen2;
  int64_t hidden_size = 0;        // C
  int64_t intermediate_size = 0;  // I
  int64_t num_hidden_layers = 0;  // L
  int64_t num_attention_heads = 0;  // NH
  int64_t num_key_value_heads = 0;  // NKV
  int64_t head_dim = 0;             // HS (may differ from C / NH)
  int64_t vocab_size = 0;           // V
  int64_t max_position_embeddings = 32768;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v bias (always true for qwen2)
  bool qk_norm = false;         // per-head RMSNorm on q and k (qwen3)
  std::string torch_dtype = "float32";
  std::vector<int64_t> bos_token_ids;
  std::vector<int64_t> eos_token_ids;

  // Throws ConfigError if a field is out of range or inconsistent (e.g. NH % NKV != 0).
  void validate() const;
  // Parameter count (embedding counted once when tied).
  int64_t num_params() const;
  // Whether self_attn.o_proj has a bias: HF llama/qwen3 use bias=config.attention_bias for
  // o_proj too; qwen2 never has one (its q/k/v bias is hard-wired, o_proj bias=False).
  bool o_proj_bias() const { return attention_bias && arch != Arch::kQwen2; }
  bool operator==(const ModelConfig&) const = default;
};

// A config with the family's fixed traits set (qwen2: attention_bias; qwen3: qk_norm) and HF's
// defaults for the rest; sizes are left 0 for the caller to fill in.
ModelConfig default_config(Arch arch);

// Parses config.json text; `source` names the file in errors.
ModelConfig parse_config(const std::string& json_text, const std::string& source);
ModelConfig load_config(const std::string& model_dir);
// Serialises as an HF config.json that transformers loads (architectures, model_type, ...).
std::string config_to_json(const ModelConfig& cfg);

}  // namespace trinity::model
