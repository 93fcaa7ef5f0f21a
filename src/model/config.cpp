// HF config.json <-> ModelConfig for qwen2 / qwen3 / llama. Absent keys take the defaults of the
// transformers config class of that family (e.g. Qwen3Config.head_dim = 128, Qwen2/Qwen3
// num_key_value_heads = 32, Llama head_dim = hidden/heads), so a file means what it means to
// transformers. Options that would change the math but that trinity does not implement (sliding
// window, mlp_bias, non-SiLU activations, rope types other than llama3, quantization) are errors
// naming the key; keys with no effect on the math are ignored.
#include "model/config.h"

#include <cmath>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "core/json_limits.h"
#include "core/log.h"
#include "model/checkpoint.h"

namespace trinity::model {

using json = nlohmann::json;

const char* arch_name(Arch a) {
  switch (a) {
    case Arch::kQwen2: return "qwen2";
    case Arch::kQwen3: return "qwen3";
    case Arch::kLlama: return "llama";
  }
  return "?";
}

static constexpr const char* kSupported = "supported: qwen2, qwen3, llama";

Arch arch_from_name(const std::string& name) {
  if (name == "qwen2") return Arch::kQwen2;
  if (name == "qwen3") return Arch::kQwen3;
  if (name == "llama") return Arch::kLlama;
  throw ConfigError("model", strcat("unsupported model_type '", name, "'; ", kSupported));
}

ModelConfig default_config(Arch arch) {
  ModelConfig c;
  c.arch = arch;
  c.attention_bias = arch == Arch::kQwen2;
  c.qk_norm = arch == Arch::kQwen3;
  c.max_position_embeddings = arch == Arch::kLlama ? 2048 : 32768;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  return c;
}

namespace {

[[noreturn]] void fail_config(const std::string& src, const std::string& msg) {
  throw ConfigError("model", strcat(src, ": ", msg));
}

// Present and not null.
bool has(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && !it->is_null();
}

int64_t as_int(const json& v, const std::string& key, const std::string& src) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  fail_config(src, strcat("key '", key, "' must be an integer, got ", v.dump()));
}

std::optional<int64_t> opt_int(const json& j, const char* key, const std::string& src) {
  if (!has(j, key)) return std::nullopt;
  return as_int(j.at(key), key, src);
}

int64_t req_int(const json& j, const char* key, const std::string& src) {
  if (!has(j, key)) fail_config(src, strcat("missing required key '", key, "'"));
  return as_int(j.at(key), key, src);
}

std::optional<double> opt_double(const json& j, const char* key, const std::string& src) {
  if (!has(j, key)) return std::nullopt;
  const json& v = j.at(key);
  if (!v.is_number()) fail_config(src, strcat("key '", key, "' must be a number, got ", v.dump()));
  return v.get<double>();
}

std::optional<bool> opt_bool(const json& j, const char* key, const std::string& src) {
  if (!has(j, key)) return std::nullopt;
  const json& v = j.at(key);
  if (!v.is_boolean()) fail_config(src, strcat("key '", key, "' must be true or false, got ", v.dump()));
  return v.get<bool>();
}

std::optional<std::string> opt_string(const json& j, const char* key, const std::string& src) {
  if (!has(j, key)) return std::nullopt;
  const json& v = j.at(key);
  if (!v.is_string()) fail_config(src, strcat("key '", key, "' must be a string, got ", v.dump()));
  return v.get<std::string>();
}

// bos/eos ids: an integer, a list of integers, or null.
std::vector<int64_t> token_ids(const json& j, const char* key, const std::string& src,
                               std::vector<int64_t> if_absent) {
  auto it = j.find(key);
  if (it == j.end()) return if_absent;
  if (it->is_null()) return {};
  if (it->is_array()) {
    std::vector<int64_t> out;
    for (const json& v : *it) out.push_back(as_int(v, key, src));
    return out;
  }
  return {as_int(*it, key, src)};
}

// rope_scaling (transformers 4.x) or rope_parameters (5.x, which also carries rope_theta).
void parse_rope(const json& j, const std::string& src, ModelConfig& cfg) {
  const char* key = has(j, "rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (!has(j, key)) return;
  const json& r = j.at(key);
  if (!r.is_object()) fail_config(src, strcat("key '", key, "' must be an object or null, got ", r.dump()));
  if (auto theta = opt_double(r, "rope_theta", src)) cfg.rope_theta = *theta;
  std::string type;
  if (auto t = opt_string(r, "rope_type", src)) type = *t;
  else if (auto t2 = opt_string(r, "type", src)) type = *t2;
  if (type.empty() || type == "default") return;
  if (type != "llama3")
    fail_config(src, strcat(key, ".rope_type '", type, "' is not supported (supported: llama3, or none/default)"));
  RopeScaling& rs = cfg.rope_scaling;
  rs.type = "llama3";
  const std::string pre = std::string(key) + ".";
  auto need = [&](const char* k) {
    auto v = opt_double(r, k, src);
    if (!v) fail_config(src, strcat("rope type llama3 needs key '", pre, k, "'"));
    return *v;
  };
  rs.factor = need("factor");
  rs.low_freq_factor = need("low_freq_factor");
  rs.high_freq_factor = need("high_freq_factor");
  if (!has(r, "original_max_position_embeddings"))
    fail_config(src, strcat("rope type llama3 needs key '", pre, "original_max_position_embeddings'"));
  rs.original_max_position_embeddings =
      as_int(r.at("original_max_position_embeddings"), pre + "original_max_position_embeddings", src);
  if (auto prf = opt_double(r, "partial_rotary_factor", src); prf && *prf != 1.0)
    fail_config(src, strcat("key '", pre, "partial_rotary_factor' = ", *prf, " is not supported (only 1.0)"));
}

// Options that change the math and that trinity does not implement.
void reject_unsupported(const json& j, const std::string& src, Arch arch) {
  if (auto act = opt_string(j, "hidden_act", src); act && *act != "silu" && *act != "swish")
    fail_config(src, strcat("hidden_act '", *act, "' is not supported (only silu)"));
  if (opt_bool(j, "use_sliding_window", src).value_or(false))
    fail_config(src, "use_sliding_window=true is not supported (sliding-window attention is not implemented)");
  if (has(j, "layer_types")) {
    const json& lt = j.at("layer_types");
    if (!lt.is_array()) fail_config(src, strcat("key 'layer_types' must be a list, got ", lt.dump()));
    for (const json& t : lt)
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        fail_config(src, strcat("layer_types entry ", t.dump(), " is not supported (only full_attention)"));
  }
  if (arch == Arch::kLlama && opt_bool(j, "mlp_bias", src).value_or(false))
    fail_config(src, "mlp_bias=true is not supported (MLP projections have no bias)");
  if (auto prf = opt_double(j, "partial_rotary_factor", src); prf && *prf != 1.0)
    fail_config(src, strcat("partial_rotary_factor ", *prf, " is not supported (only 1.0)"));
  if (has(j, "quantization_config"))
    fail_config(src, "quantization_config is present: quantized checkpoints are not supported");
  if (auto dp = opt_double(j, "attention_dropout", src); dp && *dp != 0.0)
    log::warn("[model] ", src, ": attention_dropout=", *dp, " is ignored (trinity never applies dropout)");
}

}  // namespace

ModelConfig parse_config(const std::string& json_text, const std::string& source) {
  const std::string& src = source;
  json j;
  check_json_depth(json_text, src, kMaxJsonDepth, "model");
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    fail_config(src, strcat("malformed JSON: ", e.what()));
  }
  if (!j.is_object()) fail_config(src, "expected a JSON object at the top level");
  auto mt = opt_string(j, "model_type", src);
  if (!mt) fail_config(src, strcat("missing required key 'model_type' (", kSupported, ")"));
  Arch arch;
  if (*mt == "qwen2") arch = Arch::kQwen2;
  else if (*mt == "qwen3") arch = Arch::kQwen3;
  else if (*mt == "llama") arch = Arch::kLlama;
  else
    fail_config(src, strcat("unsupported model_type '", *mt, "'; ", kSupported));

  reject_unsupported(j, src, arch);
  ModelConfig cfg = default_config(arch);
  cfg.hidden_size = req_int(j, "hidden_size", src);
  cfg.intermediate_size = req_int(j, "intermediate_size", src);
  cfg.num_hidden_layers = req_int(j, "num_hidden_layers", src);
  cfg.num_attention_heads = req_int(j, "num_attention_heads", src);
  cfg.vocab_size = req_int(j, "vocab_size", src);
  // Absent -> the family class default; explicit null -> num_attention_heads (as transformers).
  if (j.contains("num_key_value_heads") && !j.at("num_key_value_heads").is_null())
    cfg.num_key_value_heads = as_int(j.at("num_key_value_heads"), "num_key_value_heads", src);
  else if (!j.contains("num_key_value_heads") && arch != Arch::kLlama)
    cfg.num_key_value_heads = 32;
  else
    cfg.num_key_value_heads = cfg.num_attention_heads;
  if (auto hd = opt_int(j, "head_dim", src)) cfg.head_dim = *hd;
  else if (arch == Arch::kQwen3 && !j.contains("head_dim")) cfg.head_dim = 128;
  else cfg.head_dim = cfg.num_attention_heads > 0 ? cfg.hidden_size / cfg.num_attention_heads : 0;
  if (auto v = opt_int(j, "max_position_embeddings", src)) cfg.max_position_embeddings = *v;
  if (auto v = opt_double(j, "rms_norm_eps", src)) cfg.rms_norm_eps = *v;
  if (auto v = opt_double(j, "rope_theta", src)) cfg.rope_theta = *v;
  parse_rope(j, src, cfg);
  if (auto v = opt_bool(j, "tie_word_embeddings", src)) cfg.tie_word_embeddings = *v;
  // qwen2's q/k/v bias is hard-wired in transformers (an attention_bias key is ignored there).
  if (arch != Arch::kQwen2)
    if (auto v = opt_bool(j, "attention_bias", src)) cfg.attention_bias = *v;
  if (auto v = opt_string(j, "torch_dtype", src)) cfg.torch_dtype = *v;
  else if (auto v2 = opt_string(j, "dtype", src)) cfg.torch_dtype = *v2;  // transformers >= 5
  const bool llama = arch == Arch::kLlama;
  cfg.bos_token_ids = token_ids(j, "bos_token_id", src, llama ? std::vector<int64_t>{1} : std::vector<int64_t>{});
  cfg.eos_token_ids = token_ids(j, "eos_token_id", src, llama ? std::vector<int64_t>{2} : std::vector<int64_t>{});
  try {
    cfg.validate();
  } catch (const ConfigError& e) {
    // validate() messages start with "[model] "; add the file name.
    const std::string what = e.what();
    fail_config(src, what.substr(what.find("] ") + 2));
  }
  return cfg;
}

ModelConfig load_config(const std::string& model_dir) {
  const std::string path = file::join(model_dir, "config.json");
  if (!file::exists(path))
    throw IoError("model", strcat(model_dir, ": no config.json (not a Hugging Face model directory?)"));
  return parse_config(file::read_all(path), path);
}

void ModelConfig::validate() const {
  auto positive = [](int64_t v, const char* key) {
    if (v <= 0) throw ConfigError("model", strcat(key, " must be > 0, got ", v));
  };
  positive(hidden_size, "hidden_size");
  positive(intermediate_size, "intermediate_size");
  positive(num_hidden_layers, "num_hidden_layers");
  positive(num_attention_heads, "num_attention_heads");
  positive(num_key_value_heads, "num_key_value_heads");
  positive(head_dim, "head_dim");
  positive(vocab_size, "vocab_size");
  positive(max_position_embeddings, "max_position_embeddings");
  // Token ids are 32-bit; dimensions beyond these bounds cannot be a real checkpoint.
  auto at_most = [](int64_t v, int64_t max, const char* key) {
    if (v > max) throw ConfigError("model", strcat(key, " = ", v, " is too large (at most ", max, ")"));
  };
  at_most(vocab_size, int64_t{1} << 30, "vocab_size");
  at_most(hidden_size, int64_t{1} << 20, "hidden_size");
  at_most(intermediate_size, int64_t{1} << 22, "intermediate_size");
  at_most(num_hidden_layers, 10000, "num_hidden_layers");
  at_most(num_attention_heads, 4096, "num_attention_heads");
  at_most(head_dim, 65536, "head_dim");
  at_most(max_position_embeddings, int64_t{1} << 31, "max_position_embeddings");
  if (num_attention_heads % num_key_value_heads != 0)
    throw ConfigError("model", strcat("num_attention_heads (", num_attention_heads,
                                      ") must be a multiple of num_key_value_heads (",
                                      num_key_value_heads, ")"));
  if (head_dim % 2 != 0)
    throw ConfigError("model", strcat("head_dim must be even for RoPE, got ", head_dim));
  if (!(rms_norm_eps > 0) || !std::isfinite(rms_norm_eps))
    throw ConfigError("model", strcat("rms_norm_eps must be > 0, got ", rms_norm_eps));
  if (!(rope_theta > 0) || !std::isfinite(rope_theta))
    throw ConfigError("model", strcat("rope_theta must be > 0, got ", rope_theta));
  if (!rope_scaling.type.empty()) {
    const RopeScaling& r = rope_scaling;
    if (r.type != "llama3")
      throw ConfigError("model", strcat("rope_scaling type '", r.type, "' is not supported (only llama3)"));
    if (!(r.factor > 0) || !(r.low_freq_factor > 0) || !(r.high_freq_factor > r.low_freq_factor) ||
        r.original_max_position_embeddings <= 0)
      throw ConfigError("model", strcat("rope_scaling llama3 needs factor > 0, 0 < low_freq_factor < "
                                        "high_freq_factor and original_max_position_embeddings > 0; got "
                                        "factor=", r.factor, " low_freq_factor=", r.low_freq_factor,
                                        " high_freq_factor=", r.high_freq_factor,
                                        " original_max_position_embeddings=",
                                        r.original_max_position_embeddings));
  }
  if (torch_dtype != "float32" && torch_dtype != "bfloat16" && torch_dtype != "float16")
    throw ConfigError("model", strcat("torch_dtype '", torch_dtype,
                                      "' is not supported (float32, bfloat16, float16)"));
  // Family traits that config.json cannot express otherwise.
  if (arch == Arch::kQwen2 && !attention_bias)
    throw ConfigError("model", "qwen2 always has q/k/v bias: attention_bias must be true");
  if (qk_norm != (arch == Arch::kQwen3))
    throw ConfigError("model", strcat("qk_norm must be ", arch == Arch::kQwen3 ? "true" : "false",
                                      " for model_type ", arch_name(arch)));
  for (int64_t id : bos_token_ids)
    if (id < 0) throw ConfigError("model", strcat("bos_token_id must be >= 0, got ", id));
  for (int64_t id : eos_token_ids)
    if (id < 0) throw ConfigError("model", strcat("eos_token_id must be >= 0, got ", id));
}

int64_t ModelConfig::num_params() const {
  int64_t n = 0;
  for (const ParamSpec& p : param_specs(*this)) {
    int64_t k = 1;
    for (int64_t s : p.shape) k *= s;
    n += k;
  }
  return n;
}

namespace {
json ids_json(const std::vector<int64_t>& ids) {
  if (ids.empty()) return nullptr;
  if (ids.size() == 1) return ids[0];
  return ids;
}
}  // namespace

std::string config_to_json(const ModelConfig& cfg) {
  json j;  // std::map-backed: keys come out sorted, like transformers' to_json_string
  const char* archs[] = {"Qwen2ForCausalLM", "Qwen3ForCausalLM", "LlamaForCausalLM"};
  j["architectures"] = json::array({archs[static_cast<int>(cfg.arch)]});
  j["model_type"] = arch_name(cfg.arch);
  if (cfg.arch != Arch::kQwen2) j["attention_bias"] = cfg.attention_bias;
  j["attention_dropout"] = 0.0;
  j["bos_token_id"] = ids_json(cfg.bos_token_ids);
  j["eos_token_id"] = ids_json(cfg.eos_token_ids);
  j["head_dim"] = cfg.head_dim;
  j["hidden_act"] = "silu";
  j["hidden_size"] = cfg.hidden_size;
  j["initializer_range"] = 0.02;
  j["intermediate_size"] = cfg.intermediate_size;
  j["max_position_embeddings"] = cfg.max_position_embeddings;
  j["num_attention_heads"] = cfg.num_attention_heads;
  j["num_hidden_layers"] = cfg.num_hidden_layers;
  j["num_key_value_heads"] = cfg.num_key_value_heads;
  j["rms_norm_eps"] = cfg.rms_norm_eps;
  j["rope_theta"] = cfg.rope_theta;
  if (cfg.rope_scaling.type.empty()) {
    j["rope_scaling"] = nullptr;
  } else {
    const RopeScaling& r = cfg.rope_scaling;
    j["rope_scaling"] = {{"rope_type", r.type},
                         {"factor", r.factor},
                         {"low_freq_factor", r.low_freq_factor},
                         {"high_freq_factor", r.high_freq_factor},
                         {"original_max_position_embeddings", r.original_max_position_embeddings}};
  }
  j["tie_word_embeddings"] = cfg.tie_word_embeddings;
  j["torch_dtype"] = cfg.torch_dtype;
  j["use_cache"] = true;
  j["vocab_size"] = cfg.vocab_size;
  if (cfg.arch == Arch::kLlama) {
    j["mlp_bias"] = false;
    j["pretraining_tp"] = 1;
  } else {
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
    j["max_window_layers"] = cfg.num_hidden_layers;
  }
  return j.dump(2) + "\n";
}

}  // namespace trinity::model
