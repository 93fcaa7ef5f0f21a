// config.json parsing for qwen2 / qwen3 / llama (real published configs), transformers' defaults
// for absent keys, every rejected option with its message, and parse -> serialise -> parse.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "test_util.h"

namespace trinity::model {
namespace {

using json = nlohmann::json;

// Qwen/Qwen2.5-0.5B-Instruct
const char* kQwen25 = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 21,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})";

// Qwen/Qwen3-0.6B
const char* kQwen3 = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})";

// meta-llama/Llama-3.2-1B
const char* kLlama32 = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256})";

// A minimal config of `model_type` with `extra` keys merged in (null removes a key).
std::string minimal(const std::string& model_type, const json& extra = json::object()) {
  json j = {{"model_type", model_type}, {"hidden_size", 64},       {"intermediate_size", 128},
            {"num_hidden_layers", 2},   {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"vocab_size", 100}};
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    if (it.value().is_string() && it.value() == "<remove>") j.erase(it.key());
    else j[it.key()] = it.value();
  }
  return j.dump();
}

TEST(ModelConfig, ParsesQwen25) {
  const ModelConfig c = parse_config(kQwen25, "qwen2.5/config.json");
  EXPECT_EQ(c.arch, Arch::kQwen2);
  EXPECT_EQ(c.hidden_size, 896);
  EXPECT_EQ(c.intermediate_size, 4864);
  EXPECT_EQ(c.num_hidden_layers, 24);
  EXPECT_EQ(c.num_attention_heads, 14);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 64);  // 896 / 14
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_TRUE(c.rope_scaling.type.empty());
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.attention_bias);  // implied for qwen2
  EXPECT_FALSE(c.o_proj_bias());
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.bos_token_ids, std::vector<int64_t>{151643});
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(c.num_params(), 494032768);  // published parameter count of Qwen2.5-0.5B
}

TEST(ModelConfig, ParsesQwen3) {
  const ModelConfig c = parse_config(kQwen3, "qwen3/config.json");
  EXPECT_EQ(c.arch, Arch::kQwen3);
  EXPECT_EQ(c.head_dim, 128);  // != 1024 / 16
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_position_embeddings, 40960);
  EXPECT_EQ(c.rope_theta, 1e6);  // integer in the file
  EXPECT_TRUE(c.rope_scaling.type.empty());
  EXPECT_EQ(c.num_params(), 596049920);  // Qwen3-0.6B
}

TEST(ModelConfig, ParsesLlama32WithLlama3RopeScaling) {
  const ModelConfig c = parse_config(kLlama32, "llama/config.json");
  EXPECT_EQ(c.arch, Arch::kLlama);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_EQ(c.rope_scaling.low_freq_factor, 1.0);
  EXPECT_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.bos_token_ids, std::vector<int64_t>{128000});
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.num_params(), 1235814400);  // Llama-3.2-1B
}

TEST(ModelConfig, RopeScalingLegacyTypeKeyAndTransformers5RopeParameters) {
  ModelConfig c = parse_config(
      minimal("llama", {{"rope_scaling", {{"type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}}),
      "a.json");
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.rope_scaling.factor, 8.0);
  c = parse_config(minimal("qwen3", {{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1e6}}}}),
                   "b.json");
  EXPECT_TRUE(c.rope_scaling.type.empty());
  EXPECT_EQ(c.rope_theta, 1e6);
  c = parse_config(minimal("llama", {{"rope_scaling", {{"rope_type", "default"}}}}), "c.json");
  EXPECT_TRUE(c.rope_scaling.type.empty());
}

TEST(ModelConfig, AbsentKeysTakeTransformersDefaults) {
  // qwen3: Qwen3Config.head_dim defaults to 128, not hidden/heads.
  ModelConfig c = parse_config(minimal("qwen3"), "q3.json");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.torch_dtype, "float32");  // absent
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_TRUE(c.bos_token_ids.empty());
  // llama / qwen2: head_dim = hidden / heads.
  c = parse_config(minimal("llama"), "l.json");
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_EQ(c.bos_token_ids, std::vector<int64_t>{1});  // LlamaConfig defaults
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
  c = parse_config(minimal("qwen2"), "q2.json");
  EXPECT_EQ(c.head_dim, 16);
  // num_key_value_heads: null -> num_attention_heads (all); absent -> llama NH, qwen 32 (class default).
  c = parse_config(minimal("llama", {{"num_key_value_heads", "<remove>"}}), "l.json");
  EXPECT_EQ(c.num_key_value_heads, 4);
  c = parse_config(minimal("qwen2", {{"num_key_value_heads", nullptr}}), "q2.json");
  EXPECT_EQ(c.num_key_value_heads, 4);
  c = parse_config(minimal("qwen2", {{"num_attention_heads", 32}, {"hidden_size", 256},
                                      {"num_key_value_heads", "<remove>"}}),
                   "q2.json");
  EXPECT_EQ(c.num_key_value_heads, 32);
  // head_dim given explicitly for qwen2 (transformers reads it when present).
  c = parse_config(minimal("qwen2", {{"head_dim", 32}}), "q2.json");
  EXPECT_EQ(c.head_dim, 32);
  // transformers 5 spells torch_dtype "dtype".
  c = parse_config(minimal("qwen2", {{"dtype", "bfloat16"}}), "q2.json");
  EXPECT_EQ(c.torch_dtype, "bfloat16");
}

TEST(ModelConfig, AttentionBiasPerFamily) {
  // qwen2's bias is hard-wired: an attention_bias key is ignored, as transformers does.
  EXPECT_TRUE(parse_config(minimal("qwen2", {{"attention_bias", false}}), "a").attention_bias);
  const ModelConfig q3 = parse_config(minimal("qwen3", {{"attention_bias", true}}), "b");
  EXPECT_TRUE(q3.attention_bias);
  EXPECT_TRUE(q3.o_proj_bias());
  const ModelConfig ll = parse_config(minimal("llama", {{"attention_bias", true}}), "c");
  EXPECT_TRUE(ll.attention_bias);
  EXPECT_TRUE(ll.o_proj_bias());
}

TEST(ModelConfig, TokenIdsIntListOrNull) {
  ModelConfig c = parse_config(minimal("qwen2", {{"bos_token_id", nullptr}, {"eos_token_id", {5, 6}}}), "a");
  EXPECT_TRUE(c.bos_token_ids.empty());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{5, 6}));
  c = parse_config(minimal("llama", {{"bos_token_id", 7}, {"eos_token_id", nullptr}}), "a");
  EXPECT_EQ(c.bos_token_ids, std::vector<int64_t>{7});
  EXPECT_TRUE(c.eos_token_ids.empty());
  EXPECT_THROW_MSG(parse_config(minimal("llama", {{"eos_token_id", "x"}}), "f.json"), ConfigError,
                   "[model] f.json: key 'eos_token_id' must be an integer");
}

TEST(ModelConfig, UnknownModelTypeNamesItAndTheSupportedOnes) {
  EXPECT_THROW_MSG(parse_config(minimal("mistral"), "/m/config.json"), ConfigError,
                   "[model] /m/config.json: unsupported model_type 'mistral'; supported: qwen2, qwen3, llama");
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"model_type", "<remove>"}}), "/m/config.json"), ConfigError,
                   "/m/config.json: missing required key 'model_type'");
  EXPECT_THROW_MSG(arch_from_name("gpt2"), ConfigError, "unsupported model_type 'gpt2'", "qwen2, qwen3, llama");
  EXPECT_EQ(arch_from_name("qwen3"), Arch::kQwen3);
  EXPECT_STREQ(arch_name(Arch::kLlama), "llama");
}

TEST(ModelConfig, UnsupportedOptionsNameTheKey) {
  const std::string f = "dir/config.json";
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"use_sliding_window", true}}), f), ConfigError,
                   "[model] dir/config.json: use_sliding_window=true is not supported");
  // use_sliding_window=false with a sliding_window size is the normal Qwen2.5 config: accepted.
  EXPECT_NO_THROW(parse_config(minimal("qwen2", {{"use_sliding_window", false}, {"sliding_window", 4096}}), f));
  EXPECT_THROW_MSG(parse_config(minimal("qwen3", {{"layer_types", json::array({"full_attention", "sliding_attention"})}}), f),
                   ConfigError, "dir/config.json: layer_types entry \"sliding_attention\" is not supported");
  EXPECT_NO_THROW(parse_config(minimal("qwen3", {{"layer_types", json::array({"full_attention", "full_attention"})}}), f));
  EXPECT_THROW_MSG(parse_config(minimal("llama", {{"mlp_bias", true}}), f), ConfigError,
                   "dir/config.json: mlp_bias=true is not supported");
  EXPECT_THROW_MSG(parse_config(minimal("llama", {{"hidden_act", "gelu"}}), f), ConfigError,
                   "dir/config.json: hidden_act 'gelu' is not supported");
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"rope_scaling", {{"type", "yarn"}, {"factor", 4.0}}}}), f),
                   ConfigError, "dir/config.json: rope_scaling.rope_type 'yarn' is not supported");
  EXPECT_THROW_MSG(
      parse_config(minimal("llama", {{"rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}}}), f),
      ConfigError, "rope_scaling.rope_type 'linear' is not supported");
  EXPECT_THROW_MSG(
      parse_config(minimal("llama", {{"rope_parameters", {{"rope_type", "dynamic"}, {"factor", 2.0}}}}), f),
      ConfigError, "rope_parameters.rope_type 'dynamic' is not supported");
  EXPECT_THROW_MSG(parse_config(minimal("llama", {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}}}), f),
                   ConfigError, "dir/config.json: rope type llama3 needs key 'rope_scaling.low_freq_factor'");
  EXPECT_THROW_MSG(parse_config(minimal("llama", {{"quantization_config", {{"bits", 4}}}}), f), ConfigError,
                   "dir/config.json: quantization_config is present");
  EXPECT_THROW_MSG(parse_config(minimal("llama", {{"partial_rotary_factor", 0.5}}), f), ConfigError,
                   "partial_rotary_factor 0.5 is not supported");
  EXPECT_THROW_MSG(parse_config(minimal("llama", {{"torch_dtype", "float64"}}), f), ConfigError,
                   "dir/config.json: torch_dtype 'float64' is not supported");
}

TEST(ModelConfig, BadValuesNameTheKey) {
  const std::string f = "x/config.json";
  EXPECT_THROW_MSG(parse_config("{\"model_type\": \"qwen2\", ", f), ConfigError,
                   "[model] x/config.json: malformed JSON");
  EXPECT_THROW_MSG(parse_config("[1, 2]", f), ConfigError, "x/config.json: expected a JSON object");
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"hidden_size", "<remove>"}}), f), ConfigError,
                   "x/config.json: missing required key 'hidden_size'");
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"hidden_size", "big"}}), f), ConfigError,
                   "x/config.json: key 'hidden_size' must be an integer, got \"big\"");
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"hidden_size", 64.5}}), f), ConfigError,
                   "key 'hidden_size' must be an integer, got 64.5");
  EXPECT_EQ(parse_config(minimal("qwen2", {{"hidden_size", 64.0}}), f).hidden_size, 64);
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"tie_word_embeddings", 1}}), f), ConfigError,
                   "key 'tie_word_embeddings' must be true or false");
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"num_key_value_heads", 3}}), f), ConfigError,
                   "x/config.json: num_attention_heads (4) must be a multiple of num_key_value_heads (3)");
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"num_hidden_layers", 0}}), f), ConfigError,
                   "x/config.json: num_hidden_layers must be > 0, got 0");
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"vocab_size", -5}}), f), ConfigError,
                   "vocab_size must be > 0, got -5");
  EXPECT_THROW_MSG(parse_config(minimal("qwen3", {{"head_dim", 15}}), f), ConfigError,
                   "head_dim must be even for RoPE, got 15");
  EXPECT_THROW_MSG(parse_config(minimal("qwen2", {{"rms_norm_eps", 0}}), f), ConfigError,
                   "rms_norm_eps must be > 0");
  EXPECT_THROW_MSG(
      parse_config(minimal("llama", {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0},
                                                       {"low_freq_factor", 4.0}, {"high_freq_factor", 4.0},
                                                       {"original_max_position_embeddings", 8192}}}}),
                   f),
      ConfigError, "x/config.json: rope_scaling llama3 needs factor > 0, 0 < low_freq_factor < high_freq_factor");
}

TEST(ModelConfig, LoadConfigNamesTheDirectory) {
  testing::ScratchDir d;
  EXPECT_THROW_MSG(load_config(d.path()), IoError, d.path(), "no config.json");
  testing::write_bytes(d.file("config.json"), minimal("gemma"));
  EXPECT_THROW_MSG(load_config(d.path()), ConfigError, d.file("config.json"), "unsupported model_type 'gemma'");
  testing::write_bytes(d.file("config.json"), kQwen3);
  EXPECT_EQ(load_config(d.path()).head_dim, 128);
}

TEST(ModelConfig, ValidateRejectsInconsistentFamilyTraits) {
  ModelConfig c = default_config(Arch::kQwen2);
  c.hidden_size = 8, c.intermediate_size = 16, c.num_hidden_layers = 1, c.num_attention_heads = 2;
  c.num_key_value_heads = 1, c.head_dim = 4, c.vocab_size = 10;
  EXPECT_NO_THROW(c.validate());
  c.attention_bias = false;
  EXPECT_THROW_MSG(c.validate(), ConfigError, "qwen2 always has q/k/v bias");
  c = default_config(Arch::kLlama);
  c.hidden_size = 8, c.intermediate_size = 16, c.num_hidden_layers = 1, c.num_attention_heads = 2;
  c.num_key_value_heads = 1, c.head_dim = 4, c.vocab_size = 10;
  c.qk_norm = true;
  EXPECT_THROW_MSG(c.validate(), ConfigError, "qk_norm must be false for model_type llama");
}

TEST(ModelConfig, RoundTripsThroughConfigToJson) {
  std::vector<ModelConfig> cfgs = {parse_config(kQwen25, "a"), parse_config(kQwen3, "b"),
                                   parse_config(kLlama32, "c"),
                                   parse_config(minimal("llama", {{"attention_bias", true}, {"bos_token_id", nullptr},
                                                                  {"eos_token_id", {1, 2}}, {"rms_norm_eps", 1.3e-5}}),
                                                "d")};
  for (const ModelConfig& c : cfgs) {
    const std::string text = config_to_json(c);
    const ModelConfig back = parse_config(text, "roundtrip");
    EXPECT_TRUE(back == c) << text;
    EXPECT_EQ(config_to_json(back), text);
  }
  // What transformers needs to pick the class and the math.
  json q3 = json::parse(config_to_json(cfgs[1]));
  EXPECT_EQ(q3["architectures"], json::array({"Qwen3ForCausalLM"}));
  EXPECT_EQ(q3["model_type"], "qwen3");
  EXPECT_EQ(q3["head_dim"], 128);
  EXPECT_EQ(q3["hidden_act"], "silu");
  EXPECT_EQ(q3["attention_bias"], false);
  EXPECT_EQ(q3["use_sliding_window"], false);
  EXPECT_EQ(q3["tie_word_embeddings"], true);
  EXPECT_EQ(q3["torch_dtype"], "bfloat16");
  EXPECT_TRUE(q3["rope_scaling"].is_null());
  json q2 = json::parse(config_to_json(cfgs[0]));
  EXPECT_EQ(q2["architectures"], json::array({"Qwen2ForCausalLM"}));
  EXPECT_FALSE(q2.contains("attention_bias"));
  json ll = json::parse(config_to_json(cfgs[2]));
  EXPECT_EQ(ll["architectures"], json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(ll["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(ll["rope_scaling"]["factor"], 32.0);
  EXPECT_EQ(ll["rope_scaling"]["original_max_position_embeddings"], 8192);
  EXPECT_EQ(ll["eos_token_id"], json::array({128001, 128008, 128009}));
  EXPECT_EQ(ll["bos_token_id"], 128000);
  EXPECT_EQ(ll["mlp_bias"], false);
  EXPECT_EQ(ll["rms_norm_eps"], 1e-5);
}

}  // namespace
}  // namespace trinity::model
