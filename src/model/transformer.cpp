// Transformer forward/backward (see transformer.h). Per layer, with N packed rows:
//   ln1 = rmsnorm(x); q,k,v = ln1 W^T (+b); [qwen3: q,k = rmsnorm per head]; rope(q,k)
//   x += attention(q,k,v) Wo^T; ln2 = rmsnorm(x); x += (silu(ln2 Wg^T) * ln2 Wu^T) Wd^T
// then the final norm and the head. Activations for backward are kept in one arena that is
// reused across steps (grown only when a batch needs more rows).
#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/error.h"
#include "core/memory.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "model/checkpoint_dtype.h"
#include "model/safetensors.h"
#include "model/transformer_impl.h"
#include "tensor/attention.h"
#include "tensor/blas.h"
#include "tensor/kernels.h"
#include "tensor/lm_head.h"

namespace trinity::model {

using namespace trinity::tensor;

Batch Batch::next_token(const std::vector<std::vector<int32_t>>& seqs) {
  Batch b;
  b.seq_start.push_back(0);
  for (const auto& s : seqs) {
    for (size_t i = 0; i < s.size(); ++i) {
      b.tokens.push_back(s[i]);
      b.positions.push_back(static_cast<int32_t>(i));
      b.targets.push_back(i + 1 < s.size() ? s[i + 1] : -1);
    }
    b.seq_start.push_back(static_cast<int64_t>(b.tokens.size()));
  }
  return b;
}

void rope_tables(const ModelConfig& cfg, int64_t positions, std::vector<float>& cos_t,
                 std::vector<float>& sin_t) {
  const int64_t hs = cfg.head_dim, half = hs / 2;
  // inv_freq in fp32 as HF: 1 / base ** (arange(0, dim, 2) / dim)
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) {
    const float e = static_cast<float>(2 * j) / static_cast<float>(hs);
    inv[static_cast<size_t>(j)] = 1.0f / std::pow(static_cast<float>(cfg.rope_theta), e);
  }
  if (cfg.rope_scaling.type == "llama3") {
    const auto& r = cfg.rope_scaling;
    const float factor = static_cast<float>(r.factor), lo = static_cast<float>(r.low_freq_factor),
                hi = static_cast<float>(r.high_freq_factor);
    const float old_len = static_cast<float>(r.original_max_position_embeddings);
    const float lo_wavelen = old_len / lo, hi_wavelen = old_len / hi;
    for (auto& f : inv) {
      const float wavelen = 2.0f * static_cast<float>(M_PI) / f;
      float g = wavelen > lo_wavelen ? f / factor : f;
      const bool medium = !(wavelen < hi_wavelen) && !(wavelen > lo_wavelen);
      if (medium) {
        const float smooth = (old_len / wavelen - lo) / (hi - lo);
        g = (1.0f - smooth) * g / factor + smooth * g;
      }
      f = g;
    }
  }
  cos_t.resize(static_cast<size_t>(positions * half));
  sin_t.resize(cos_t.size());
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t j = 0; j < half; ++j) {
      const float ang = static_cast<float>(p) * inv[static_cast<size_t>(j)];
      cos_t[static_cast<size_t>(p * half + j)] = static_cast<float>(std::cos(static_cast<double>(ang)));
      sin_t[static_cast<size_t>(p * half + j)] = static_cast<float>(std::sin(static_cast<double>(ang)));
    }
}

namespace {

void zero(float* p, int64_t n) {
  const int64_t blk = 1 << 16;
  parallel_for((n + blk - 1) / blk, [&](int64_t b) {
    const int64_t e = std::min(n, (b + 1) * blk);
    std::memset(p + b * blk, 0, sizeof(float) * static_cast<size_t>(e - b * blk));
  });
}

// `what` names the allocation in the out-of-memory error.
float* aligned_floats(int64_t n, const char* what) {
  const size_t bytes = (static_cast<size_t>(n) * 4 + 63) / 64 * 64;
  check_allocation(static_cast<int64_t>(bytes), strcat("allocating the ", what, " (", n, " floats)"), "model");
  void* p = alloc_large(bytes ? bytes : 64);
  if (!p)
    throw ValueError(
        "model", strcat("out of memory allocating the ", what, " (", format_bytes(static_cast<double>(bytes)), ")"));
  return static_cast<float*>(p);
}

}  // namespace

namespace {

// The parameters of a model with `head`: the checkpoint's, with a value head in place of lm_head.
std::vector<ParamSpec> head_param_specs(const ModelConfig& cfg, HeadKind head) {
  std::vector<ParamSpec> specs = model::param_specs(cfg);
  if (head == HeadKind::kValue) {
    specs.erase(
        std::remove_if(specs.begin(), specs.end(), [](const ParamSpec& s) { return s.name == "lm_head.weight"; }),
        specs.end());
    specs.push_back({"score.weight", {1, cfg.hidden_size}});
    specs.push_back({"score.bias", {1}});
  }
  return specs;
}

// A fresh critic from a policy checkpoint has no value head: it starts at zero.
bool zero_value_head(HeadKind head, const ParamSpec& s, const WeightSource& src) {
  return head == HeadKind::kValue && s.name.rfind("score.", 0) == 0 && !src.contains(s.name);
}

// The decoder layers' seven linear weights: what WeightStorage::kBF16 holds in bf16.
bool is_layer_linear(const std::string& name) {
  static const char* const kEnds[] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                      "self_attn.o_proj.weight", "mlp.gate_proj.weight",    "mlp.up_proj.weight",
                                      "mlp.down_proj.weight"};
  if (name.rfind("model.layers.", 0) != 0) return false;
  for (const char* e : kEnds) {
    const size_t n = std::strlen(e);
    if (name.size() > n && name.compare(name.size() - n, n, e) == 0) return true;
  }
  return false;
}

// Rounds n fp32 values to bf16 storage in parallel blocks (nearest even; widening is
// tensor::convert_to_f32).
void round_bf16(uint16_t* dst, const float* src, int64_t n) {
  const int64_t blk = 1 << 16;
  parallel_for((n + blk - 1) / blk, [&](int64_t b) {
    const int64_t e = std::min(n, (b + 1) * blk);
    for (int64_t i = b * blk; i < e; ++i) dst[i] = f32_to_bf16(src[i]);
  });
}

int64_t numel_of(const ParamSpec& s) {
  int64_t n = 1;
  for (int64_t d : s.shape) n *= d;
  return n;
}

}  // namespace

Transformer::Transformer(const ModelConfig& cfg, HeadKind head, WeightStorage storage, const Transformer* share_base)
    : cfg_(cfg), head_(head), storage_(storage), impl_(std::make_unique<Impl>()) {
  cfg_.validate();
  specs_ = head_param_specs(cfg_, head_);
  for (const auto& s : specs_) {
    int64_t n = 1;
    for (int64_t d : s.shape)
      if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 56))
        throw ValueError("model", strcat("parameter ", s.name, " is far too large (shape from config.json)"));
    const bool held = storage_ == WeightStorage::kBF16 && is_layer_linear(s.name);
    held_spec_.push_back(held ? 1 : 0);
    int64_t& total = held ? n_held_ : n_params_;
    offsets_.push_back(total);
    total += held ? (n + 31) / 32 * 32 : (n + 15) / 16 * 16;  // 64-byte aligned starts
  }
  if (share_base) {
    if (share_base->storage_ != storage_ || share_base->head_ != head_ || share_base->n_held_ != n_held_ ||
        share_base->n_params_ != n_params_ || share_base->specs_.size() != specs_.size())
      throw ValueError("model", "sharing weights needs a model of the same config, head and weight storage");
    params_owner_ = share_base->params_owner_;
    params_ = share_base->params_;
    held_owner_ = share_base->held_owner_;
    held_ = share_base->held_;
  } else {
    params_ = aligned_floats(n_params_, "model weights");
    params_owner_ = std::shared_ptr<float>(params_, [](float* p) { std::free(p); });
    zero(params_, n_params_);
    if (n_held_ > 0) {
      held_ = reinterpret_cast<uint16_t*>(aligned_floats(n_held_ / 2, "bf16 layer weights"));
      held_owner_ = std::shared_ptr<uint16_t>(held_, [](uint16_t* p) { std::free(p); });
      zero(reinterpret_cast<float*>(held_), n_held_ / 2);
    }
  }
  bind(params_, false);
  TRINITY_ASSERT(impl_->wte && impl_->lnf, "param_specs is missing embeddings or final norm");
}

// Points the per-layer views (lp or lg) and the head pointers into `base` (params or grads).
void Transformer::bind(float* base, bool is_grad) {
  auto& im = *impl_;
  const int64_t L = cfg_.num_hidden_layers;
  auto& layers = is_grad ? im.lg : im.lp;
  layers.resize(static_cast<size_t>(L));
  auto index = [&](const std::string& full) -> size_t {
    for (size_t k = 0; k < specs_.size(); ++k)
      if (specs_[k].name == full) return k;
    return specs_.size();
  };
  auto find = [&](const std::string& full) -> float* {
    const size_t k = index(full);
    return k == specs_.size() || held_spec_[k] ? nullptr : base + offsets_[k];
  };
  if (storage_ == WeightStorage::kBF16 && !is_grad) im.held.resize(static_cast<size_t>(L));
  for (int64_t i = 0; i < L; ++i) {
    const std::string pre = "model.layers." + std::to_string(i) + ".";
    auto get = [&](const char* n) { return find(pre + n); };
    if (storage_ == WeightStorage::kBF16 && !is_grad) {
      auto hget = [&](const char* n) -> const uint16_t* {
        const size_t k = index(pre + n);
        TRINITY_ASSERT(k < specs_.size() && held_spec_[k], "no bf16-held weight ", pre, n);
        return held_ + offsets_[k];
      };
      im.held[static_cast<size_t>(i)] = {hget("self_attn.q_proj.weight"), hget("self_attn.k_proj.weight"),
                                         hget("self_attn.v_proj.weight"), hget("self_attn.o_proj.weight"),
                                         hget("mlp.gate_proj.weight"),    hget("mlp.up_proj.weight"),
                                         hget("mlp.down_proj.weight")};
    }
    LayerParams& l = layers[static_cast<size_t>(i)];
    l = {get("input_layernorm.weight"),          get("self_attn.q_proj.weight"),
         get("self_attn.q_proj.bias"),           get("self_attn.k_proj.weight"),
         get("self_attn.k_proj.bias"),           get("self_attn.v_proj.weight"),
         get("self_attn.v_proj.bias"),           get("self_attn.o_proj.weight"),
         get("self_attn.o_proj.bias"),           get("self_attn.q_norm.weight"),
         get("self_attn.k_norm.weight"),         get("post_attention_layernorm.weight"),
         get("mlp.gate_proj.weight"),            get("mlp.up_proj.weight"),
         get("mlp.down_proj.weight")};
    const bool held = storage_ == WeightStorage::kBF16;  // the linear weights are in im.held
    TRINITY_ASSERT(l.ln1 && l.ln2 && (held || (l.wq && l.wk && l.wv && l.wo && l.wg && l.wu && l.wd)),
                   "param_specs is missing a layer weight");
  }
  float* wte = find("model.embed_tokens.weight");
  float* head = head_ == HeadKind::kLm ? (cfg_.tie_word_embeddings ? wte : find("lm_head.weight")) : nullptr;
  (is_grad ? im.dwte : im.wte) = wte;
  (is_grad ? im.dlnf : im.lnf) = find("model.norm.weight");
  (is_grad ? im.dwhead : im.whead) = head;
  (is_grad ? im.dvw : im.vw) = find("score.weight");
  (is_grad ? im.dvb : im.vb) = find("score.bias");
}

// Gradients are allocated on first use, so an inference-only model costs only its parameters.
void Transformer::ensure_grads() {
  if (impl_->lora) {  // frozen base: only the adapters have gradients
    impl_->lora->ensure_grads();
    return;
  }
  if (grads_) return;
  if (storage_ == WeightStorage::kBF16)
    throw UnsupportedError("model",
                           "the decoder's linear weights are held in bf16 and frozen: only LoRA adapters "
                           "train on such a model (add model.lora_configs, or hold the weights in fp32)");
  grads_ = aligned_floats(n_params_, "gradients");
  zero(grads_, n_params_);
  bind(grads_, true);
}

Transformer::~Transformer() {
  std::free(grads_);
}

void Transformer::own_held() {
  if (!held_ || held_owner_.use_count() <= 1) return;
  auto* p = reinterpret_cast<uint16_t*>(aligned_floats(n_held_ / 2, "bf16 layer weights"));
  std::memcpy(p, held_, sizeof(uint16_t) * static_cast<size_t>(n_held_));
  held_ = p;
  held_owner_ = std::shared_ptr<uint16_t>(p, [](uint16_t* q) { std::free(q); });
  impl_->widened_layer = -1;
  bind(params_, false);
}

void Transformer::own_params() {
  if (!params_ || params_owner_.use_count() <= 1) return;
  float* p = aligned_floats(n_params_, "model weights");
  std::memcpy(p, params_, sizeof(float) * static_cast<size_t>(n_params_));
  params_ = p;
  params_owner_ = std::shared_ptr<float>(p, [](float* q) { std::free(q); });
  bind(params_, false);
}

uint16_t* Transformer::held() {
  own_held();
  return held_;
}

Transformer::Transformer(Transformer&& o) noexcept
    : cfg_(std::move(o.cfg_)),
      head_(o.head_),
      storage_(o.storage_),
      specs_(std::move(o.specs_)),
      offsets_(std::move(o.offsets_)),
      held_spec_(std::move(o.held_spec_)),
      n_params_(o.n_params_),
      n_held_(o.n_held_),
      params_(o.params_),
      params_owner_(std::move(o.params_owner_)),
      grads_(o.grads_),
      held_(o.held_),
      held_owner_(std::move(o.held_owner_)),
      impl_(std::move(o.impl_)) {
  o.params_ = o.grads_ = nullptr;
  o.held_ = nullptr;
}

Transformer& Transformer::operator=(Transformer&& o) noexcept {
  if (this != &o) {
    std::free(grads_);
    cfg_ = std::move(o.cfg_);
    head_ = o.head_;
    storage_ = o.storage_;
    specs_ = std::move(o.specs_);
    offsets_ = std::move(o.offsets_);
    held_spec_ = std::move(o.held_spec_);
    n_params_ = o.n_params_;
    n_held_ = o.n_held_;
    params_ = o.params_;
    params_owner_ = std::move(o.params_owner_);
    grads_ = o.grads_;
    held_ = o.held_;
    held_owner_ = std::move(o.held_owner_);
    impl_ = std::move(o.impl_);
    o.params_ = o.grads_ = nullptr;
    o.held_ = nullptr;
  }
  return *this;
}

float* Transformer::param(const std::string& name) {
  own_params();
  for (size_t k = 0; k < specs_.size(); ++k)
    if (specs_[k].name == name) return held_spec_[k] ? nullptr : params_ + offsets_[k];
  return nullptr;
}

float* Transformer::grad(const std::string& name) {
  ensure_grads();
  for (size_t k = 0; k < specs_.size(); ++k)
    if (specs_[k].name == name) return grads_ + offsets_[k];
  return nullptr;
}

std::vector<Tensor> Transformer::param_tensors() const {
  std::vector<Tensor> out;
  for (size_t k = 0; k < specs_.size(); ++k)
    out.push_back(held_spec_[k] ? Tensor::view(DType::kBF16, specs_[k].shape, held_ + offsets_[k], nullptr)
                                : Tensor::view(DType::kF32, specs_[k].shape, params_ + offsets_[k], nullptr));
  return out;
}

void Transformer::copy_weights_from(const Transformer& src) {
  bool same = specs_.size() == src.specs_.size();
  for (size_t k = 0; same && k < specs_.size(); ++k)
    same = specs_[k].name == src.specs_[k].name && specs_[k].shape == src.specs_[k].shape;
  if (!same) throw ValueError("model", "copy_weights_from: the two models have different parameters (config or head)");
  impl_->widened_layer = -1;
  const bool same_held = held_ && held_ == src.held_;  // shared memory: nothing to copy
  const bool same_params = params_ == src.params_;
  if (!same_held) own_held();
  if (!same_params) own_params();
  for (size_t k = 0; k < specs_.size(); ++k) {
    const int64_t n = numel_of(specs_[k]);
    const bool dh = held_spec_[k] != 0, sh = src.held_spec_[k] != 0;
    if ((dh && sh && same_held) || (!dh && !sh && same_params)) continue;
    if (!dh && !sh)
      std::memcpy(params_ + offsets_[k], src.params_ + src.offsets_[k], sizeof(float) * static_cast<size_t>(n));
    else if (dh && sh)
      std::memcpy(held_ + offsets_[k], src.held_ + src.offsets_[k], sizeof(uint16_t) * static_cast<size_t>(n));
    else if (!dh)
      convert_to_f32(params_ + offsets_[k], src.held_ + src.offsets_[k], DType::kBF16, n);
    else
      round_bf16(held_ + offsets_[k], src.params_ + src.offsets_[k], n);
  }
}

std::vector<Tensor> Transformer::grad_tensors() const {
  TRINITY_ASSERT(grads_, "no gradients yet: call zero_grad() or backward() first");
  std::vector<Tensor> out;
  for (size_t k = 0; k < specs_.size(); ++k)
    out.push_back(Tensor::view(DType::kF32, specs_[k].shape, grads_ + offsets_[k], nullptr));
  return out;
}

void Transformer::zero_grad() {
  ensure_grads();
  if (impl_->lora)
    std::fill(impl_->lora->grads.begin(), impl_->lora->grads.end(), 0.0f);
  else
    zero(grads_, n_params_);
}

void Transformer::set_gradient_checkpointing(bool on) {
  impl_->checkpointing = on;
}
bool Transformer::gradient_checkpointing() const {
  return impl_->checkpointing;
}

void Transformer::init_random(uint64_t seed, float std) {
  Rng rng(seed);
  impl_->widened_layer = -1;
  own_held();
  own_params();
  for (size_t k = 0; k < specs_.size(); ++k) {
    const auto& s = specs_[k];
    const int64_t n = numel_of(s);
    const bool is_norm = s.name.find("norm") != std::string::npos;
    const bool is_bias = s.name.size() > 5 && s.name.compare(s.name.size() - 5, 5, ".bias") == 0;
    if (held_spec_[k]) {
      for (int64_t i = 0; i < n; ++i) held_[offsets_[k] + i] = f32_to_bf16(static_cast<float>(rng.normal()) * std);
      continue;
    }
    float* p = params_ + offsets_[k];
    for (int64_t i = 0; i < n; ++i)
      p[i] = is_norm ? 1.0f : is_bias ? 0.0f : static_cast<float>(rng.normal()) * std;
  }
}

Transformer Transformer::load(const std::string& dir, HeadKind head, WeightStorage storage) {
  const ModelConfig cfg = load_config(dir);  // validated: bounded dimensions
  WeightSource src = WeightSource::open_dir(dir);
  // Every tensor config.json implies must be in the checkpoint with its shape before the weights are
  // allocated: a config.json that does not match its tensors (num_hidden_layers: 10000 on a 2-layer
  // checkpoint) is one error naming the tensor, not an allocation of its imagined size first.
  for (const ParamSpec& s : head_param_specs(cfg, head))
    if (!zero_value_head(head, s, src)) src.check_shape(s.name, s.shape);
  Transformer t(cfg, head, storage);
  for (size_t k = 0; k < t.specs_.size(); ++k) {
    const auto& s = t.specs_[k];
    if (zero_value_head(head, s, src)) continue;                       // like a new nn.Linear at zero
    if (t.held_spec_[k] && src.get(s.name).dtype() == DType::kBF16) {  // kept as stored
      std::memcpy(t.held_ + t.offsets_[k], src.get(s.name).data(), sizeof(uint16_t) * static_cast<size_t>(numel_of(s)));
      continue;
    }
    Tensor w = src.get_f32(s.name, s.shape);
    if (t.held_spec_[k])
      round_bf16(t.held_ + t.offsets_[k], w.f32(), w.numel());
    else
      std::memcpy(t.params_ + t.offsets_[k], w.f32(), w.nbytes());
  }
  return t;
}

WeightStorage lossless_storage(const std::string& model_dir) {
  return stored_dtype(model_dir) == DType::kBF16 ? WeightStorage::kBF16 : WeightStorage::kF32;
}

void Transformer::save(const std::string& dir, const SaveOptions& opts) const {
  auto tensors = param_tensors();
  std::vector<NamedTensor> named;
  for (size_t k = 0; k < specs_.size(); ++k) named.push_back({specs_[k].name, &tensors[k]});
  save_checkpoint(dir, cfg_, named, opts);
}

size_t Transformer::activation_bytes() const {
  return (impl_->arena.size() + impl_->scratch.size() + impl_->hm.size() + impl_->kept_logits.size() +
          impl_->widened.size()) *
         sizeof(float);
}

void Transformer::set_logits_cache_bytes(int64_t bytes) { impl_->logits_cache_bytes = bytes; }


// Sizes the arena for the batch and makes the RoPE tables cover its positions.
void Transformer::Impl::prepare(const ModelConfig& cfg, const Batch& b) {
  const int64_t n = b.rows();
  TRINITY_ASSERT(n > 0 && b.num_seqs() > 0, "empty batch");
  TRINITY_ASSERT(static_cast<int64_t>(b.positions.size()) == n &&
                     static_cast<int64_t>(b.targets.size()) == n && b.seq_start.back() == n,
                 "inconsistent batch");
  if (!b.prefix.empty()) {
    TRINITY_ASSERT(static_cast<int64_t>(b.prefix.size()) == b.num_seqs(), "batch prefix: one entry per sequence");
    for (int64_t i = 0; i < b.num_seqs(); ++i) {
      const int64_t p = b.prefix[static_cast<size_t>(i)];
      TRINITY_ASSERT(p < 0 || (p < b.num_seqs() && p != i && b.prefix[static_cast<size_t>(p)] < 0),
                     "batch prefix of sequence ", i, ": ", p, " is not a sequence without a prefix");
    }
  }
  batch = b;
  for (int32_t t : b.tokens)
    if (t < 0 || t >= cfg.vocab_size)
      throw ValueError("model", strcat("token id ", t, " is out of range [0, ", cfg.vocab_size, ")"));
  int32_t max_pos = 0;
  for (int32_t p : b.positions) max_pos = std::max(max_pos, p);
  if (max_pos + 1 > rope_positions) {
    rope_positions = std::max<int64_t>(max_pos + 1, 2 * rope_positions);
    rope_tables(cfg, rope_positions, cos_t, sin_t);
  }
  const int64_t c = cfg.hidden_size, hs = cfg.head_dim, nh = cfg.num_attention_heads,
                nkv = cfg.num_key_value_heads, I = cfg.intermediate_size,
                L = cfg.num_hidden_layers;
  const bool qkn = cfg.qk_norm;
  const int64_t per_layer = c + 1 + c + (qkn ? (nh + nkv) * hs + nh + nkv : 0) + nh * hs +
                            2 * nkv * hs + nh * hs + nh + c + 1 + c + 3 * I;
  // Checkpointed: every layer keeps its input x, and one set of the rest is shared by all layers.
  const bool ckpt = checkpointing;
  const int64_t total = (ckpt ? L * c + (per_layer - c) : L * per_layer) + c + 1 + c;
  if (n > cap_rows || ckpt != arena_checkpointed) {
    arena_checkpointed = ckpt;
    arena.clear();
    arena.shrink_to_fit();
    arena.assign(static_cast<size_t>(n * total), 0.0f);
    scratch.assign(static_cast<size_t>(n * (2 * c + nh * hs + 2 * nkv * hs + nh * hs + 3 * I)), 0.0f);
    cap_rows = n;
  }
  float* p = arena.data();
  auto take = [&](int64_t cols) {
    float* r = p;
    p += n * cols;
    return r;
  };
  acts.resize(static_cast<size_t>(L));
  if (ckpt)
    for (auto& a : acts) a.x = take(c);
  for (auto& a : acts) {
    if (ckpt && &a != &acts[0]) {  // the shared set of acts[0]
      float* x = a.x;
      a = acts[0];
      a.x = x;
      continue;
    }
    if (!ckpt) a.x = take(c);
    a.rstd1 = take(1);
    a.ln1 = take(c);
    a.qlin = qkn ? take(nh * hs) : nullptr;
    a.klin = qkn ? take(nkv * hs) : nullptr;
    a.qrstd = qkn ? take(nh) : nullptr;
    a.krstd = qkn ? take(nkv) : nullptr;
    a.q = take(nh * hs);
    a.k = take(nkv * hs);
    a.v = take(nkv * hs);
    a.att = take(nh * hs);
    a.lse = take(nh);
    a.xmid = take(c);
    a.rstd2 = take(1);
    a.ln2 = take(c);
    a.gate = take(I);
    a.up = take(I);
    a.hmlp = take(I);
  }
  xf = take(c);
  rstdf = take(1);
  lnf_out = take(c);
  float* q = scratch.data();
  auto stake = [&](int64_t cols) {
    float* r = q;
    q += n * cols;
    return r;
  };
  dx = stake(c);
  dln = stake(c);
  dq = stake(nh * hs);
  dk = stake(nkv * hs);
  dv = stake(nkv * hs);
  datt = stake(nh * hs);
  dgate = stake(I);
  dup = stake(I);
  dh = stake(I);
  if (lora) lora->prepare(n, ckpt ? 1 : L);
}

const LayerParams& Transformer::Impl::layer(const ModelConfig& cfg, size_t l) {
  if (held.empty()) return lp[l];
  if (widened_layer == static_cast<int64_t>(l)) return wl;
  const int64_t c = cfg.hidden_size, q = cfg.num_attention_heads * cfg.head_dim,
                kv = cfg.num_key_value_heads * cfg.head_dim, I = cfg.intermediate_size;
  const HeldLayer& h = held[l];
  const uint16_t* src[7] = {h.wq, h.wk, h.wv, h.wo, h.wg, h.wu, h.wd};
  const int64_t n[7] = {q * c, kv * c, kv * c, c * q, I * c, I * c, c * I};
  int64_t total = 0;
  for (int64_t m : n) total += (m + 15) / 16 * 16;
  if (static_cast<int64_t>(widened.size()) < total) widened.resize(static_cast<size_t>(total));
  float* dst[7];
  int64_t off = 0;
  for (int i = 0; i < 7; ++i) {
    dst[i] = widened.data() + off;
    convert_to_f32(dst[i], src[i], DType::kBF16, n[i]);
    off += (n[i] + 15) / 16 * 16;
  }
  wl = lp[l];
  wl.wq = dst[0], wl.wk = dst[1], wl.wv = dst[2], wl.wo = dst[3], wl.wg = dst[4], wl.wu = dst[5], wl.wd = dst[6];
  widened_layer = static_cast<int64_t>(l);
  return wl;
}

// One decoder layer from acts[l].x to the next layer's input (or xf); adapters after their linears.
void Transformer::Impl::layer_forward(const ModelConfig& cfg, size_t l) {
  const int64_t n = batch.rows(), c = cfg.hidden_size, hs = cfg.head_dim,
                nh = cfg.num_attention_heads, nkv = cfg.num_key_value_heads,
                I = cfg.intermediate_size;
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  const AttnShape ash{nh, nkv, hs};
  LoraState* lo = lora.get();
  {
    LayerActs& a = acts[l];
    const LayerParams& w = layer(cfg, l);
    rmsnorm_forward(a.ln1, a.rstd1, a.x, w.ln1, n, c, eps);
    float* qd = cfg.qk_norm ? a.qlin : a.q;
    float* kd = cfg.qk_norm ? a.klin : a.k;
    linear_forward(qd, a.ln1, w.wq, w.bq, n, c, nh * hs);
    linear_forward(kd, a.ln1, w.wk, w.bk, n, c, nkv * hs);
    linear_forward(a.v, a.ln1, w.wv, w.bv, n, c, nkv * hs);
    if (lo) {
      lo->forward(l, 0, qd, a.ln1, n);
      lo->forward(l, 1, kd, a.ln1, n);
      lo->forward(l, 2, a.v, a.ln1, n);
    }
    if (cfg.qk_norm) {
      rmsnorm_forward(a.q, a.qrstd, a.qlin, w.qn, n * nh, hs, eps);
      rmsnorm_forward(a.k, a.krstd, a.klin, w.kn, n * nkv, hs, eps);
    }
    rope_forward(a.q, batch.positions.data(), cos_t.data(), sin_t.data(), n, nh, hs);
    rope_forward(a.k, batch.positions.data(), cos_t.data(), sin_t.data(), n, nkv, hs);
    attention_forward(a.att, a.lse, a.q, a.k, a.v, batch.seq_start.data(), batch.num_seqs(), ash, batch.prefix_data());
    // xmid = x + att Wo^T
    std::memcpy(a.xmid, a.x, sizeof(float) * static_cast<size_t>(n * c));
    gemm(false, true, static_cast<int>(n), static_cast<int>(c), static_cast<int>(nh * hs), 1.0f,
         a.att, static_cast<int>(nh * hs), w.wo, static_cast<int>(nh * hs), 1.0f, a.xmid,
         static_cast<int>(c));
    if (w.bo) parallel_for(n, [&](int64_t r) { for (int64_t j = 0; j < c; ++j) a.xmid[r * c + j] += w.bo[j]; });
    if (lo) lo->forward(l, 3, a.xmid, a.att, n);
    rmsnorm_forward(a.ln2, a.rstd2, a.xmid, w.ln2, n, c, eps);
    linear_forward(a.gate, a.ln2, w.wg, nullptr, n, c, I);
    linear_forward(a.up, a.ln2, w.wu, nullptr, n, c, I);
    if (lo) {
      lo->forward(l, 4, a.gate, a.ln2, n);
      lo->forward(l, 5, a.up, a.ln2, n);
    }
    swiglu_forward(a.hmlp, a.gate, a.up, n * I);
    float* xout = l + 1 < acts.size() ? acts[l + 1].x : xf;
    std::memcpy(xout, a.xmid, sizeof(float) * static_cast<size_t>(n * c));
    gemm(false, true, static_cast<int>(n), static_cast<int>(c), static_cast<int>(I), 1.0f, a.hmlp,
         static_cast<int>(I), w.wd, static_cast<int>(I), 1.0f, xout, static_cast<int>(c));
    if (lo) lo->forward(l, 6, xout, a.hmlp, n);
  }
}

void Transformer::Impl::body_forward(const ModelConfig& cfg) {
  const int64_t n = batch.rows(), c = cfg.hidden_size;
  if (lora) lora->begin_forward();
  embedding_forward(acts[0].x, batch.tokens.data(), wte, n, c);
  for (size_t l = 0; l < acts.size(); ++l) layer_forward(cfg, l);
  rmsnorm_forward(lnf_out, rstdf, xf, lnf, n, c, static_cast<float>(cfg.rms_norm_eps));
}

// Expects d(loss)/d(final norm output) in dln; accumulates every parameter gradient.
void Transformer::Impl::body_backward(const ModelConfig& cfg) {
  const int64_t n = batch.rows(), c = cfg.hidden_size, hs = cfg.head_dim,
                nh = cfg.num_attention_heads, nkv = cfg.num_key_value_heads,
                I = cfg.intermediate_size;
  const AttnShape ash{nh, nkv, hs};
  zero(dx, n * c);
  rmsnorm_backward(dx, dlnf, dln, xf, lnf, rstdf, n, c);
  LoraState* lo = lora.get();
  for (size_t li = acts.size(); li-- > 0;) {
    if (checkpointing) layer_forward(cfg, li);  // its activations, from the kept input
    LayerActs& a = acts[li];
    const LayerParams& w = layer(cfg, li);
    const LayerParams& g = lg[li];  // all null when the base is frozen (LoRA)
    // MLP: x_out = xmid + hmlp Wd^T
    zero(dh, n * I);
    linear_backward(dh, g.wd, nullptr, dx, a.hmlp, w.wd, n, I, c);
    if (lo) lo->backward(li, 6, dh, dx, a.hmlp, n);
    zero(dgate, n * I);
    zero(dup, n * I);
    swiglu_backward(dgate, dup, dh, a.gate, a.up, n * I);
    zero(dln, n * c);
    linear_backward(dln, g.wg, nullptr, dgate, a.ln2, w.wg, n, c, I);
    linear_backward(dln, g.wu, nullptr, dup, a.ln2, w.wu, n, c, I);
    if (lo) {
      lo->backward(li, 4, dln, dgate, a.ln2, n);
      lo->backward(li, 5, dln, dup, a.ln2, n);
    }
    rmsnorm_backward(dx, g.ln2, dln, a.xmid, w.ln2, a.rstd2, n, c);  // dx: d/d(xmid)
    // Attention: xmid = x + att Wo^T
    zero(datt, n * nh * hs);
    linear_backward(datt, g.wo, g.bo, dx, a.att, w.wo, n, nh * hs, c);
    if (lo) lo->backward(li, 3, datt, dx, a.att, n);
    zero(dq, n * nh * hs);
    zero(dk, n * nkv * hs);
    zero(dv, n * nkv * hs);
    attention_backward(dq, dk, dv, datt, a.q, a.k, a.v, a.att, a.lse, batch.seq_start.data(), batch.num_seqs(), ash,
                       batch.prefix_data());
    rope_backward(dq, batch.positions.data(), cos_t.data(), sin_t.data(), n, nh, hs);
    rope_backward(dk, batch.positions.data(), cos_t.data(), sin_t.data(), n, nkv, hs);
    float* dql = dq;
    float* dkl = dk;
    if (cfg.qk_norm) {  // reuse datt / dh as the pre-norm gradient buffers
      dql = datt;
      dkl = dh;
      zero(dql, n * nh * hs);
      zero(dkl, n * nkv * hs);
      rmsnorm_backward(dql, g.qn, dq, a.qlin, w.qn, a.qrstd, n * nh, hs);
      rmsnorm_backward(dkl, g.kn, dk, a.klin, w.kn, a.krstd, n * nkv, hs);
    }
    zero(dln, n * c);
    linear_backward(dln, g.wq, g.bq, dql, a.ln1, w.wq, n, c, nh * hs);
    linear_backward(dln, g.wk, g.bk, dkl, a.ln1, w.wk, n, c, nkv * hs);
    linear_backward(dln, g.wv, g.bv, dv, a.ln1, w.wv, n, c, nkv * hs);
    if (lo) {
      lo->backward(li, 0, dln, dql, a.ln1, n);
      lo->backward(li, 1, dln, dkl, a.ln1, n);
      lo->backward(li, 2, dln, dv, a.ln1, n);
    }
    rmsnorm_backward(dx, g.ln1, dln, a.x, w.ln1, a.rstd1, n, c);  // dx: d/d(x)
  }
  if (dwte) embedding_backward(dwte, dx, batch.tokens.data(), n, c);
}

void Transformer::forward(const Batch& batch, std::vector<float>& logprob,
                          std::vector<float>& entropy, float inv_temp) {
  TRINITY_ASSERT(head_ == HeadKind::kLm, "forward() needs the LM head; use forward_values()");
  auto& im = *impl_;
  im.prepare(cfg_, batch);
  im.body_forward(cfg_);
  const int64_t n = batch.rows(), c = cfg_.hidden_size;
  im.head_rows.clear();
  im.head_targets.clear();
  for (int64_t r = 0; r < n; ++r) {
    const int32_t t = batch.targets[static_cast<size_t>(r)];
    if (t < 0) continue;
    if (t >= cfg_.vocab_size)
      throw ValueError("model", strcat("target token id ", t, " is out of range [0, ", cfg_.vocab_size, ")"));
    im.head_rows.push_back(r);
    im.head_targets.push_back(t);
  }
  const int64_t m = static_cast<int64_t>(im.head_rows.size());
  im.hm.resize(static_cast<size_t>(m * c));
  parallel_for(m, [&](int64_t i) {
    std::memcpy(im.hm.data() + i * c, im.lnf_out + im.head_rows[static_cast<size_t>(i)] * c,
                sizeof(float) * static_cast<size_t>(c));
  });
  logprob.assign(static_cast<size_t>(m), 0.0f);
  entropy.assign(static_cast<size_t>(m), 0.0f);
  im.lse_head.assign(static_cast<size_t>(m), 0.0f);
  im.inv_temp = inv_temp;
  im.logits_kept = m * cfg_.vocab_size * 4 <= im.logits_cache_bytes;
  if (im.logits_kept && static_cast<int64_t>(im.kept_logits.size()) < m * cfg_.vocab_size)
    im.kept_logits.resize(static_cast<size_t>(m * cfg_.vocab_size));
  if (m > 0)
    lm_head_forward(logprob.data(), entropy.data(), im.lse_head.data(), im.hm.data(), im.whead,
                    im.head_targets.data(), HeadShape{m, c, cfg_.vocab_size, inv_temp},
                    im.logits_kept ? im.kept_logits.data() : nullptr);
  im.ent_head = entropy;
  im.have_forward = true;
}

void Transformer::backward(const std::vector<float>& dlogprob, const std::vector<float>& dentropy) {
  auto& im = *impl_;
  TRINITY_ASSERT(im.have_forward && head_ == HeadKind::kLm, "backward() without a forward()");
  ensure_grads();
  im.have_forward = false;  // one backward per forward (the kept logits are consumed)
  const int64_t m = static_cast<int64_t>(im.head_rows.size()), n = im.batch.rows(),
                c = cfg_.hidden_size;
  TRINITY_ASSERT(static_cast<int64_t>(dlogprob.size()) == m, "dlogprob has ", dlogprob.size(),
                 " values, forward produced ", m);
  std::vector<float> dent = dentropy;
  if (dent.empty()) dent.assign(static_cast<size_t>(m), 0.0f);
  TRINITY_ASSERT(static_cast<int64_t>(dent.size()) == m, "dentropy size mismatch");
  std::vector<float> dhm(static_cast<size_t>(m * c), 0.0f);
  if (m > 0)
    lm_head_backward(dhm.data(), im.dwhead, dlogprob.data(), dent.data(), im.hm.data(), im.whead,
                     im.head_targets.data(), im.lse_head.data(), im.ent_head.data(),
                     HeadShape{m, c, cfg_.vocab_size, im.inv_temp},
                     im.logits_kept ? im.kept_logits.data() : nullptr);
  im.logits_kept = false;  // consumed: a second backward would need a new forward
  zero(im.dln, n * c);
  parallel_for(m, [&](int64_t i) {
    std::memcpy(im.dln + im.head_rows[static_cast<size_t>(i)] * c, dhm.data() + i * c,
                sizeof(float) * static_cast<size_t>(c));
  });
  im.body_backward(cfg_);
}

void Transformer::forward_values(const Batch& batch, std::vector<float>& values) {
  TRINITY_ASSERT(head_ == HeadKind::kValue, "forward_values() needs the value head");
  auto& im = *impl_;
  im.prepare(cfg_, batch);
  im.body_forward(cfg_);
  const int64_t n = batch.rows(), c = cfg_.hidden_size;
  values.assign(static_cast<size_t>(n), 0.0f);
  linear_forward(values.data(), im.lnf_out, im.vw, im.vb, n, c, 1);
  im.have_forward = true;
}

void Transformer::backward_values(const std::vector<float>& dvalues) {
  auto& im = *impl_;
  TRINITY_ASSERT(im.have_forward && head_ == HeadKind::kValue, "backward_values() without forward");
  ensure_grads();
  const int64_t n = im.batch.rows(), c = cfg_.hidden_size;
  TRINITY_ASSERT(static_cast<int64_t>(dvalues.size()) == n, "dvalues size mismatch");
  zero(im.dln, n * c);
  linear_backward(im.dln, im.dvw, im.dvb, dvalues.data(), im.lnf_out, im.vw, n, c, 1);
  im.body_backward(cfg_);
}

}  // namespace trinity::model
