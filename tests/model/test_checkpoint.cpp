// Checkpoint directories: HF parameter names per family, save -> load round trip (F32 / BF16),
// atomic replacement (old or new, never partial; no temp dirs left; a killed writer leaves the old
// checkpoint intact), refusal to replace a non-checkpoint directory, tokenizer file copy.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "core/error.h"
#include "model/checkpoint.h"
#include "test_util.h"

namespace trinity::model {
namespace {

namespace fs = std::filesystem;
using tensor::DType;
using tensor::Tensor;
using testing::read_bytes;
using testing::ScratchDir;
using testing::write_bytes;

ModelConfig small(Arch arch) {
  ModelConfig c = default_config(arch);
  c.hidden_size = 16, c.intermediate_size = 24, c.num_hidden_layers = 2, c.num_attention_heads = 4;
  c.num_key_value_heads = 2, c.head_dim = arch == Arch::kQwen3 ? 6 : 4, c.vocab_size = 32;
  c.bos_token_ids = {1}, c.eos_token_ids = {2, 3};
  return c;
}

std::map<std::string, std::vector<int64_t>> spec_map(const ModelConfig& c) {
  std::map<std::string, std::vector<int64_t>> m;
  for (const ParamSpec& p : param_specs(c)) m[p.name] = p.shape;
  return m;
}

TEST(ParamSpecs, Qwen2HasQkvBiasButNoOprojBias) {
  ModelConfig c = small(Arch::kQwen2);
  const auto specs = param_specs(c);
  auto m = spec_map(c);
  EXPECT_EQ(m.size(), specs.size()) << "duplicate names";
  EXPECT_EQ(specs.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(specs.front().shape, (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(specs.back().name, "lm_head.weight");
  EXPECT_EQ(m.at("model.layers.1.self_attn.q_proj.weight"), (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(m.at("model.layers.1.self_attn.q_proj.bias"), std::vector<int64_t>{16});
  EXPECT_EQ(m.at("model.layers.1.self_attn.k_proj.weight"), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(m.at("model.layers.1.self_attn.k_proj.bias"), std::vector<int64_t>{8});
  EXPECT_EQ(m.at("model.layers.1.self_attn.v_proj.bias"), std::vector<int64_t>{8});
  EXPECT_EQ(m.at("model.layers.0.self_attn.o_proj.weight"), (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(m.count("model.layers.0.self_attn.o_proj.bias"), 0u);
  EXPECT_EQ(m.count("model.layers.0.self_attn.q_norm.weight"), 0u);
  EXPECT_EQ(m.at("model.layers.0.mlp.gate_proj.weight"), (std::vector<int64_t>{24, 16}));
  EXPECT_EQ(m.at("model.layers.0.mlp.up_proj.weight"), (std::vector<int64_t>{24, 16}));
  EXPECT_EQ(m.at("model.layers.0.mlp.down_proj.weight"), (std::vector<int64_t>{16, 24}));
  EXPECT_EQ(m.at("model.layers.0.input_layernorm.weight"), std::vector<int64_t>{16});
  EXPECT_EQ(m.at("model.layers.0.post_attention_layernorm.weight"), std::vector<int64_t>{16});
  EXPECT_EQ(m.at("model.norm.weight"), std::vector<int64_t>{16});
  EXPECT_EQ(specs.size(), 1u + 2 * 12 + 1 + 1);  // embed, 2 layers x 12, norm, lm_head
  // Per-layer order: input norm, q(+b), k(+b), v(+b), o, post norm, gate, up, down.
  std::vector<std::string> layer0;
  for (const auto& p : specs)
    if (p.name.rfind("model.layers.0.", 0) == 0) layer0.push_back(p.name.substr(15));
  EXPECT_EQ(layer0, (std::vector<std::string>{
                        "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.q_proj.bias",
                        "self_attn.k_proj.weight", "self_attn.k_proj.bias", "self_attn.v_proj.weight",
                        "self_attn.v_proj.bias", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                        "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"}));
}

TEST(ParamSpecs, Qwen3HasQkNormAndHeadDimNotHiddenOverHeads) {
  ModelConfig c = small(Arch::kQwen3);
  c.tie_word_embeddings = true;
  auto m = spec_map(c);
  EXPECT_EQ(m.at("model.layers.0.self_attn.q_proj.weight"), (std::vector<int64_t>{24, 16}));  // NH*HS = 24
  EXPECT_EQ(m.at("model.layers.0.self_attn.k_proj.weight"), (std::vector<int64_t>{12, 16}));
  EXPECT_EQ(m.at("model.layers.0.self_attn.o_proj.weight"), (std::vector<int64_t>{16, 24}));
  EXPECT_EQ(m.at("model.layers.0.self_attn.q_norm.weight"), std::vector<int64_t>{6});
  EXPECT_EQ(m.at("model.layers.1.self_attn.k_norm.weight"), std::vector<int64_t>{6});
  EXPECT_EQ(m.count("model.layers.0.self_attn.q_proj.bias"), 0u);
  EXPECT_EQ(m.count("lm_head.weight"), 0u);  // tied
  int64_t total = 0;
  for (const auto& [n, s] : m) {
    int64_t k = 1;
    for (int64_t v : s) k *= v;
    total += k;
  }
  EXPECT_EQ(c.num_params(), total);
}

TEST(ParamSpecs, LlamaAttentionBiasAlsoBiasesOproj) {
  ModelConfig c = small(Arch::kLlama);
  auto m = spec_map(c);
  EXPECT_EQ(m.count("model.layers.0.self_attn.q_proj.bias"), 0u);
  EXPECT_EQ(m.count("model.layers.0.self_attn.o_proj.bias"), 0u);
  c.attention_bias = true;
  m = spec_map(c);
  EXPECT_EQ(m.at("model.layers.0.self_attn.q_proj.bias"), std::vector<int64_t>{16});
  EXPECT_EQ(m.at("model.layers.0.self_attn.o_proj.bias"), std::vector<int64_t>{16});  // HF: bias=attention_bias
}

// Random tensors for every parameter of `c`, each filled with `base + i * 1e-3`.
std::vector<Tensor> make_params(const ModelConfig& c, float base) {
  std::vector<Tensor> out;
  for (const ParamSpec& p : param_specs(c)) {
    Tensor t(DType::kF32, p.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = base + 1e-3f * static_cast<float>(i % 997);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<NamedTensor> named(const ModelConfig& c, const std::vector<Tensor>& ts) {
  std::vector<NamedTensor> out;
  const auto specs = param_specs(c);
  for (size_t i = 0; i < specs.size(); ++i) out.push_back({specs[i].name, &ts[i]});
  return out;
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Checkpoint, SaveThenLoadF32AndBf16) {
  ScratchDir d;
  for (Arch arch : {Arch::kQwen2, Arch::kQwen3, Arch::kLlama}) {
    for (DType dt : {DType::kF32, DType::kBF16}) {
      ModelConfig c = small(arch);
      if (arch == Arch::kLlama) {
        c.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 64};
        c.tie_word_embeddings = true;
      }
      const auto params = make_params(c, 0.5f);
      const std::string out = d.file(strcat("ckpt_", arch_name(arch), "_", tensor::dtype_name(dt)));
      save_checkpoint(out, c, named(c, params), {dt, ""});
      EXPECT_EQ(listing(out), (std::vector<std::string>{"config.json", "model.safetensors"}));
      ModelConfig back = load_config(out);
      EXPECT_EQ(back.torch_dtype, dt == DType::kBF16 ? "bfloat16" : "float32");
      back.torch_dtype = c.torch_dtype;
      EXPECT_TRUE(back == c) << read_bytes(out + "/config.json");
      WeightSource ws = WeightSource::open_dir(out);
      const auto specs = param_specs(back);
      EXPECT_EQ(ws.names().size(), specs.size());
      for (size_t i = 0; i < specs.size(); ++i) {
        EXPECT_EQ(ws.get(specs[i].name).dtype(), dt);
        const Tensor t = ws.get_f32(specs[i].name, specs[i].shape);
        for (int64_t k = 0; k < t.numel(); ++k) {
          const float want = dt == DType::kF32 ? params[i].f32()[k]
                                               : tensor::bf16_to_f32(tensor::f32_to_bf16(params[i].f32()[k]));
          ASSERT_EQ(t.f32()[k], want) << specs[i].name << "[" << k << "]";
        }
      }
    }
  }
  EXPECT_EQ(listing(d.path()).size(), 6u);  // no temp directories left behind
}

TEST(Checkpoint, LoadParamsInSpecOrderWithErrorsNamingFileAndTensor) {
  ScratchDir d;
  ModelConfig c = small(Arch::kQwen3);
  const auto params = make_params(c, 0.25f);
  const std::string out = d.file("ck");
  save_checkpoint(out, c, named(c, params), {DType::kBF16, ""});
  const auto loaded = load_params(WeightSource::open_dir(out), load_config(out));
  ASSERT_EQ(loaded.size(), params.size());
  for (size_t i = 0; i < loaded.size(); ++i) {
    ASSERT_EQ(loaded[i].dtype(), DType::kF32);
    ASSERT_EQ(loaded[i].shape(), params[i].shape());
    EXPECT_EQ(loaded[i].f32()[0], tensor::bf16_to_f32(tensor::f32_to_bf16(params[i].f32()[0])));
  }
  // A tied config ignores lm_head.weight in the file.
  ModelConfig tied = c;
  tied.tie_word_embeddings = true;
  EXPECT_EQ(load_params(WeightSource::open_dir(out), tied).size(), params.size() - 1);
  // More heads than the file has: wrong shape, named with file and tensor.
  ModelConfig wide = c;
  wide.num_attention_heads = 8;
  EXPECT_THROW_MSG(load_params(WeightSource::open_dir(out), wide), IoError,
                   "[safetensors] " + out + "/model.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight' "
                   "has shape [24, 16], expected [48, 16]");
  // qk-norm tensors absent from a qwen3 file: the missing tensor is named.
  auto no_norm = named(c, params);
  std::vector<NamedTensor> kept;
  for (const auto& nt : no_norm)
    if (nt.name.find("q_norm") == std::string::npos) kept.push_back(nt);
  write_safetensors(d.file("partial.safetensors"), kept, DType::kF32);
  EXPECT_THROW_MSG(load_params(WeightSource::open_dir(d.file("partial.safetensors")), c), IoError,
                   d.file("partial.safetensors"), "no tensor 'model.layers.0.self_attn.q_norm.weight'");
}

TEST(Checkpoint, ReplacesAnExistingCheckpointAtomically) {
  ScratchDir d;
  ModelConfig c = small(Arch::kQwen2);
  const std::string out = d.file("ckpt");
  const auto p1 = make_params(c, 1.0f);
  save_checkpoint(out, c, named(c, p1));
  write_bytes(out + "/stale_extra.txt", "from the old checkpoint");
  const auto p2 = make_params(c, 2.0f);
  save_checkpoint(out + "/", c, named(c, p2));  // trailing slash is the same directory
  EXPECT_EQ(listing(out), (std::vector<std::string>{"config.json", "model.safetensors"}));
  EXPECT_EQ(WeightSource::open_dir(out).get_f32("model.norm.weight", {16}).f32()[0], 2.0f);
  EXPECT_EQ(listing(d.path()), std::vector<std::string>{"ckpt"});  // no .tmp.* / .old.* left
}

TEST(Checkpoint, FailedSaveLeavesOldCheckpointAndNoTempDir) {
  ScratchDir d;
  ModelConfig c = small(Arch::kQwen3);
  const std::string out = d.file("ckpt");
  const auto p1 = make_params(c, 1.0f);
  save_checkpoint(out, c, named(c, p1));
  const std::string old_cfg = read_bytes(out + "/config.json"), old_st = read_bytes(out + "/model.safetensors");

  // Fails inside the temp dir after config.json was written (duplicate tensor name).
  const auto p2 = make_params(c, 2.0f);
  auto nts = named(c, p2);
  nts.push_back(nts.front());
  EXPECT_THROW_MSG(save_checkpoint(out, c, nts), IoError, "given twice");
  // Missing and wrong-shaped tensors are refused before anything is written.
  auto missing = named(c, p2);
  missing.erase(missing.end() - 2);  // model.norm.weight (lm_head.weight is last)
  EXPECT_THROW_MSG(save_checkpoint(out, c, missing), IoError, "[checkpoint] " + out,
                   "tensor 'model.norm.weight' is missing");
  Tensor wrong(DType::kF32, {3});
  auto bad = named(c, p2);
  bad[1].tensor = &wrong;
  EXPECT_THROW_MSG(save_checkpoint(out, c, bad), IoError, "tensor '" + bad[1].name + "' has shape [3], expected [16]");
  ModelConfig invalid = c;
  invalid.num_key_value_heads = 3;
  EXPECT_THROW_MSG(save_checkpoint(out, invalid, named(c, p2)), ConfigError, "multiple of num_key_value_heads");

  EXPECT_EQ(read_bytes(out + "/config.json"), old_cfg);
  EXPECT_EQ(read_bytes(out + "/model.safetensors"), old_st);
  EXPECT_EQ(listing(d.path()), std::vector<std::string>{"ckpt"});
}

TEST(Checkpoint, RefusesToReplaceANonCheckpointDirectory) {
  ScratchDir d;
  ModelConfig c = small(Arch::kLlama);
  const auto p = make_params(c, 1.0f);
  const std::string home = d.file("precious");
  fs::create_directories(home);
  write_bytes(home + "/notes.txt", "do not delete");
  EXPECT_THROW_MSG(save_checkpoint(home, c, named(c, p)), IoError, home, "does not look like a checkpoint");
  EXPECT_EQ(read_bytes(home + "/notes.txt"), "do not delete");
  write_bytes(d.file("afile"), "x");
  EXPECT_THROW_MSG(save_checkpoint(d.file("afile"), c, named(c, p)), IoError, "is not a directory");
  // An empty directory is fine; missing parents are created.
  fs::create_directories(d.file("empty"));
  EXPECT_NO_THROW(save_checkpoint(d.file("empty"), c, named(c, p)));
  EXPECT_NO_THROW(save_checkpoint(d.file("a/b/c"), c, named(c, p)));
  EXPECT_TRUE(fs::exists(d.file("a/b/c/model.safetensors")));
}

TEST(Checkpoint, CopiesTokenizerFilesWhenPresent) {
  ScratchDir d;
  const std::string src = d.file("src");
  fs::create_directories(src);
  write_bytes(src + "/tokenizer.json", "{\"tok\": 1}");
  write_bytes(src + "/tokenizer_config.json", "{\"chat_template\": \"x\"}");
  write_bytes(src + "/generation_config.json", "{}");
  write_bytes(src + "/unrelated.bin", "no");
  ModelConfig c = small(Arch::kQwen2);
  const auto p = make_params(c, 1.0f);
  const std::string out = d.file("out");
  save_checkpoint(out, c, named(c, p), {DType::kBF16, src});
  EXPECT_EQ(listing(out), (std::vector<std::string>{"config.json", "generation_config.json", "model.safetensors",
                                                    "tokenizer.json", "tokenizer_config.json"}));
  EXPECT_EQ(read_bytes(out + "/tokenizer.json"), "{\"tok\": 1}");
  // Saving over the very directory we copy the tokenizer from keeps the tokenizer.
  save_checkpoint(out, c, named(c, p), {DType::kF32, out});
  EXPECT_EQ(read_bytes(out + "/tokenizer.json"), "{\"tok\": 1}");
  EXPECT_THROW_MSG(save_checkpoint(out, c, named(c, p), {DType::kF32, d.file("nope")}), IoError,
                   d.file("nope"), "tokenizer source is not a directory");
}

// A writer killed at a random moment leaves <dir> holding either the complete old or the complete
// new checkpoint (its temp dir may remain, named <dir>.tmp.<pid>).
TEST(Checkpoint, KilledWriterNeverLeavesAPartialCheckpoint) {
  ScratchDir d;
  ModelConfig c = small(Arch::kLlama);
  c.hidden_size = 256, c.intermediate_size = 1024, c.num_hidden_layers = 4, c.vocab_size = 2048;
  c.num_attention_heads = 4, c.num_key_value_heads = 2, c.head_dim = 64;  // ~6.8M params, 27 MB
  const std::string out = d.file("ckpt");
  const auto p_old = make_params(c, 1.0f), p_new = make_params(c, 2.0f);
  save_checkpoint(out, c, named(c, p_old));
  int saw_old = 0, saw_new = 0;
  for (int trial = 0; trial < 8; ++trial) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        save_checkpoint(out, c, named(c, trial % 2 ? p_old : p_new));
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + 11 * trial));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    // The checkpoint must load completely and be uniformly old or new.
    const ModelConfig back = load_config(out);
    WeightSource ws = WeightSource::open_dir(out);
    float first = 0;
    bool consistent = true;
    for (const ParamSpec& s : param_specs(back)) {
      const float v = ws.get_f32(s.name, s.shape).f32()[0];
      if (first == 0) first = v;
      consistent = consistent && v == first;
    }
    EXPECT_TRUE(consistent) << "trial " << trial;
    (first == 1.0f ? saw_old : saw_new)++;
    for (const std::string& name : listing(d.path()))
      if (name != "ckpt") fs::remove_all(d.file(name));  // the killed writer's temp dir
  }
  EXPECT_EQ(saw_old + saw_new, 8);
  std::printf("killed writers: checkpoint was old %d times, new %d times\n", saw_old, saw_new);
}

}  // namespace
}  // namespace trinity::model
