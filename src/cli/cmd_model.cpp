// Model commands: init-model (random HF checkpoint), debug logprobs, debug grad, and the demo
// (train a small model on a pattern with AdamW, then generate from it with the engine).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/file.h"
#include "core/json_limits.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "engine/engine.h"
#include "hub/model.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "tensor/blas.h"
#include "tokenizer/model_files.h"
#include "trainer/optimizer.h"

namespace trinity::cli {

namespace {

using json = nlohmann::json;

// Reads {"tokens": [...]} lines; errors name the file and line.
std::vector<std::vector<int32_t>> read_token_lines(const std::string& path, int64_t vocab) {
  std::ifstream in(path);
  if (!in) throw IoError("cli", strcat("cannot open input '", path, "'"));
  std::vector<std::vector<int32_t>> seqs;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j;
    check_json_depth(line, strcat(path, ":", lineno), kMaxJsonDepth, "cli");
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      throw ValueError("cli", strcat(path, ":", lineno, ": invalid JSON: ", e.what()));
    }
    if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array())
      throw ValueError("cli", strcat(path, ":", lineno, ": expected {\"tokens\": [ids...]}"));
    std::vector<int32_t> s;
    for (const auto& t : j["tokens"]) {
      if (!t.is_number_integer())
        throw ValueError("cli", strcat(path, ":", lineno, ": token ", t.dump(), " is not an integer"));
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id >= vocab)
        throw ValueError("cli", strcat(path, ":", lineno, ": token id ", id,
                                       " is out of range [0, ", vocab, ")"));
      s.push_back(static_cast<int32_t>(id));
    }
    if (s.empty()) throw ValueError("cli", strcat(path, ":", lineno, ": empty token list"));
    seqs.push_back(std::move(s));
  }
  if (seqs.empty()) throw ValueError("cli", strcat(path, ": no sequences"));
  return seqs;
}

// Groups sequences into batches of at most `max_tokens` rows (a longer sequence gets its own).
std::vector<std::pair<size_t, size_t>> batches(const std::vector<std::vector<int32_t>>& seqs,
                                               size_t max_tokens) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t begin = 0, tokens = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (i > begin && tokens + seqs[i].size() > max_tokens) {
      out.push_back({begin, i});
      begin = i;
      tokens = 0;
    }
    tokens += seqs[i].size();
  }
  out.push_back({begin, seqs.size()});
  return out;
}

}  // namespace

int cmd_init_model(const Argv& argv) {
  Args a("init-model", argv,
         {"arch", "hidden", "layers", "heads", "kv-heads", "head-dim", "intermediate", "vocab",
          "tie!", "seed", "out", "dtype", "std", "rope-theta", "max-pos", "tokenizer"});
  const std::string tokenizer = a.str("tokenizer", "none");
  if (tokenizer != "none" && tokenizer != "bytes")
    throw ConfigError("cli", strcat("init-model: --tokenizer must be none or bytes, got '", tokenizer, "'"));
  model::ModelConfig cfg = model::default_config(model::arch_from_name(a.str("arch")));
  cfg.hidden_size = a.i64("hidden");
  cfg.num_hidden_layers = a.i64("layers");
  cfg.num_attention_heads = a.i64("heads");
  cfg.num_key_value_heads = a.i64("kv-heads", cfg.num_attention_heads);
  if (cfg.num_attention_heads <= 0 || cfg.hidden_size % cfg.num_attention_heads != 0) {
    if (!a.has("head-dim"))
      throw ConfigError("cli", strcat("init-model: --hidden ", cfg.hidden_size,
                                      " is not divisible by --heads ", cfg.num_attention_heads,
                                      "; pass --head-dim"));
  }
  cfg.head_dim = a.i64("head-dim", cfg.num_attention_heads > 0 ? cfg.hidden_size / cfg.num_attention_heads : 0);
  cfg.intermediate_size = a.i64("intermediate", 4 * cfg.hidden_size);
  cfg.vocab_size = a.i64("vocab", tokenizer == "bytes" ? tok::kByteVocab : 32000);
  if (tokenizer == "bytes" && cfg.vocab_size < tok::kByteVocab)
    throw ConfigError("cli", strcat("init-model: --tokenizer bytes needs --vocab >= ", tok::kByteVocab, ", got ",
                                    cfg.vocab_size));
  cfg.tie_word_embeddings = a.flag("tie");
  cfg.rope_theta = a.f64("rope-theta", cfg.arch == model::Arch::kLlama ? 500000.0 : 1000000.0);
  cfg.max_position_embeddings = a.i64("max-pos", 4096);
  cfg.rms_norm_eps = cfg.arch == model::Arch::kLlama ? 1e-5 : 1e-6;
  const std::string dtype = a.str("dtype", "f32");
  if (dtype != "f32" && dtype != "bf16")
    throw ConfigError("cli", strcat("init-model: --dtype must be f32 or bf16, got '", dtype, "'"));
  cfg.torch_dtype = dtype == "bf16" ? "bfloat16" : "float32";
  if (tokenizer == "bytes")
    cfg.eos_token_ids = {tok::kByteEndOfText, tok::kByteImEnd};
  else
    cfg.eos_token_ids = {cfg.vocab_size > 1 ? cfg.vocab_size - 1 : 0};
  cfg.validate();
  // bf16 on disk: the layer weights are drawn straight into bf16 (the same values as rounding an fp32
  // init), so a 7B-shaped model is initialised in half the memory.
  model::Transformer m(cfg, model::HeadKind::kLm,
                       dtype == "bf16" ? model::WeightStorage::kBF16 : model::WeightStorage::kF32);
  m.init_random(static_cast<uint64_t>(a.i64("seed", 0)), static_cast<float>(a.f64("std", 0.02)));
  model::SaveOptions opts;
  opts.dtype = dtype == "bf16" ? tensor::DType::kBF16 : tensor::DType::kF32;
  const std::string out = a.str("out");
  m.save(out, opts);
  if (tokenizer == "bytes") tok::write_byte_tokenizer(out);
  std::printf("wrote %s: %s, %.2fM parameters\n", out.c_str(), model::arch_name(cfg.arch),
              static_cast<double>(cfg.num_params()) / 1e6);
  return 0;
}

namespace {

// --model, plus --adapter (a PEFT LoRA adapter on it) and --checkpointing (activation checkpointing).
model::Transformer debug_model(const Args& a) {
  model::Transformer m = model::Transformer::load(hub::resolve_model_dir(a.str("model"), "--model"));
  if (a.has("adapter")) model::load_adapter(m, a.str("adapter"));
  m.set_gradient_checkpointing(a.flag("checkpointing"));
  return m;
}

}  // namespace

int cmd_debug_logprobs(const Argv& argv) {
  Args a("debug logprobs", argv, {"model", "adapter", "input", "output", "temperature", "max-batch-tokens"});
  const double temp = a.f64("temperature", 1.0);
  if (!(temp > 0)) throw ConfigError("cli", strcat("debug logprobs: --temperature must be > 0, got ", temp));
  model::Transformer m = debug_model(a);
  const auto seqs = read_token_lines(a.str("input"), m.config().vocab_size);
  std::string out;
  std::vector<float> lp, ent;
  for (auto [b, e] : batches(seqs, static_cast<size_t>(a.i64("max-batch-tokens", 4096)))) {
    std::vector<std::vector<int32_t>> chunk(seqs.begin() + static_cast<long>(b),
                                            seqs.begin() + static_cast<long>(e));
    m.forward(model::Batch::next_token(chunk), lp, ent, static_cast<float>(1.0 / temp));
    size_t off = 0;
    for (const auto& s : chunk) {
      const size_t k = s.size() - 1;
      json j;
      j["logprobs"] = std::vector<float>(lp.begin() + static_cast<long>(off), lp.begin() + static_cast<long>(off + k));
      j["entropy"] = std::vector<float>(ent.begin() + static_cast<long>(off), ent.begin() + static_cast<long>(off + k));
      off += k;
      out += j.dump() + "\n";
    }
  }
  file::write_atomic(a.str("output"), out);
  return 0;
}

int cmd_debug_grad(const Argv& argv) {
  Args a("debug grad", argv, {"model", "adapter", "checkpointing!", "input", "output", "max-batch-tokens"});
  model::Transformer m = debug_model(a);
  const auto seqs = read_token_lines(a.str("input"), m.config().vocab_size);
  m.zero_grad();
  std::vector<float> lp, ent;
  for (auto [b, e] : batches(seqs, static_cast<size_t>(a.i64("max-batch-tokens", 4096)))) {
    std::vector<std::vector<int32_t>> chunk(seqs.begin() + static_cast<long>(b),
                                            seqs.begin() + static_cast<long>(e));
    m.forward(model::Batch::next_token(chunk), lp, ent);
    m.backward(std::vector<float>(lp.size(), -1.0f), {});
  }
  // With an adapter only the adapters have gradients (PEFT names); otherwise every parameter.
  const auto grads = m.has_lora() ? m.lora_tensors(true) : m.grad_tensors();
  const auto& specs = m.has_lora() ? m.lora_specs() : m.param_specs();
  std::vector<model::NamedTensor> named;
  for (size_t i = 0; i < grads.size(); ++i) named.push_back({specs[i].name, &grads[i]});
  model::write_safetensors(a.str("output"), named, tensor::DType::kF32);
  return 0;
}

int cmd_demo(const Argv& argv) {
  Args a("demo", argv, {"hidden", "layers", "vocab", "steps"});
  model::ModelConfig cfg = model::default_config(model::Arch::kQwen2);
  cfg.hidden_size = a.i64("hidden", 256);
  cfg.num_hidden_layers = a.i64("layers", 4);
  cfg.num_attention_heads = 4;
  cfg.num_key_value_heads = 2;
  cfg.head_dim = cfg.hidden_size / 4;
  cfg.intermediate_size = 4 * cfg.hidden_size;
  cfg.vocab_size = a.i64("vocab", 4096);
  cfg.max_position_embeddings = 1024;
  cfg.eos_token_ids = {0};
  cfg.validate();
  std::printf("trinity demo: BLAS core %s, %d threads\n", tensor::blas_core_name(), num_threads());
  auto m = std::make_shared<model::Transformer>(cfg);
  m->init_random(42);
  std::printf("model: qwen2, hidden %lld, %lld layers, vocab %lld, %.2fM parameters\n",
              static_cast<long long>(cfg.hidden_size), static_cast<long long>(cfg.num_hidden_layers),
              static_cast<long long>(cfg.vocab_size), static_cast<double>(m->num_params()) / 1e6);
  // A repeating pattern the model can learn: 1 2 3 ... 16 1 2 3 ...
  std::vector<std::vector<int32_t>> seqs(4);
  for (size_t b = 0; b < seqs.size(); ++b)
    for (int i = 0; i < 128; ++i) seqs[b].push_back(static_cast<int32_t>(1 + (i + static_cast<int>(b)) % 16));
  const auto batch = model::Batch::next_token(seqs);
  std::vector<float> lp, ent;
  m->forward(batch, lp, ent);
  std::printf("first logprobs (random init, ~ -log V = %.3f):", -std::log(static_cast<double>(cfg.vocab_size)));
  for (int i = 0; i < 6; ++i) std::printf(" %.3f", lp[static_cast<size_t>(i)]);
  std::printf("\n");
  // SFT on the pattern with the trainer's AdamW + cosine schedule: mean logprob must rise.
  const int64_t steps = a.i64("steps", 20);
  trainer::AdamW opt(m->num_params(), trainer::AdamWConfig{1e-3, 0.9, 0.999, 1e-8, 0.01});
  trainer::LrSchedule sched{"cosine", 2, steps, 0.1};
  Timer t;
  for (int64_t s = 0; s < steps; ++s) {
    m->zero_grad();
    m->forward(batch, lp, ent);
    double mean = 0;
    for (float x : lp) mean += x;
    mean /= static_cast<double>(lp.size());
    m->backward(std::vector<float>(lp.size(), -1.0f / static_cast<float>(lp.size())), {});
    const double norm = trainer::clip_grad_norm(m->grads(), m->num_params(), 1.0);
    opt.step(m->params(), m->grads(), 1e-3 * sched.factor(s));
    if (s % 5 == 0 || s + 1 == steps)
      std::printf("step %3lld  mean logprob %.4f  entropy[0] %.3f  grad norm %.3f\n",
                  static_cast<long long>(s), mean, ent[0], norm);
  }
  std::printf("%.0f tokens/s (forward+backward+AdamW, %lld tokens/step)\n",
              static_cast<double>(steps * batch.rows()) / t.seconds(), static_cast<long long>(batch.rows()));
  // Generate with the engine from the trained weights: greedy continuation of the pattern.
  engine::EngineOptions eo;
  eo.kv_cache_bytes = 64 << 20;
  engine::Engine e(m, steps, nullptr, eo);
  engine::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 12;
  const std::vector<int32_t> prompt = {5, 6, 7, 8};
  auto r = e.generate(prompt, p).completions[0];
  std::printf("engine (weights v%lld), greedy after 5 6 7 8:", static_cast<long long>(r.model_version));
  for (int32_t id : r.token_ids) std::printf(" %d", id);
  std::printf("   (%s)\n", r.finish_reason.c_str());
  return 0;
}

}  // namespace trinity::cli
