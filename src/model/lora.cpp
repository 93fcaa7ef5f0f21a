// LoRA adapters (model/lora.h): their config, their forward/backward on one adapted linear, the
// Transformer's LoRA methods and merging into a plain copy. The PEFT directory I/O is lora_io.cpp.
#include "model/lora.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "model/lora_impl.h"
#include "model/transformer_impl.h"
#include "tensor/blas.h"

namespace trinity::model {

using tensor::gemm;

namespace {

const char* const kNames[kLoraTargets] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
const char* const kPaths[kLoraTargets] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                          "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                          "mlp.down_proj"};

int module_index(const std::string& name) {
  for (int t = 0; t < kLoraTargets; ++t)
    if (name == kNames[t] || name == kPaths[t]) return t;
  return -1;
}

// in / out features of module t.
std::pair<int64_t, int64_t> module_dims(const ModelConfig& c, int t) {
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  switch (t) {
    case 0:
      return {c.hidden_size, q};
    case 1:
    case 2:
      return {c.hidden_size, kv};
    case 3:
      return {q, c.hidden_size};
    case 4:
    case 5:
      return {c.hidden_size, c.intermediate_size};
    default:
      return {c.intermediate_size, c.hidden_size};
  }
}

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

const char* lora_module_name(int t) {
  return kNames[t];
}
const char* lora_module_path(int t) {
  return kPaths[t];
}

std::array<bool, kLoraTargets> LoraConfig::targets() const {
  std::array<bool, kLoraTargets> on{};
  for (const auto& m : target_modules) {
    if (m == "all-linear" || m == "all_linear") {
      on.fill(true);
      continue;
    }
    const int t = module_index(m);
    if (t < 0)
      throw ConfigError("lora", strcat("target_modules: unknown module '", m,
                                       "' (expected all-linear or q_proj, k_proj, v_proj, o_proj, gate_proj, "
                                       "up_proj, down_proj)"));
    on[static_cast<size_t>(t)] = true;
  }
  for (const auto& m : exclude_modules) {
    const int t = module_index(m);
    if (t < 0) throw ConfigError("lora", strcat("exclude_modules: unknown module '", m, "'"));
    on[static_cast<size_t>(t)] = false;
  }
  if (std::none_of(on.begin(), on.end(), [](bool b) { return b; }))
    throw ConfigError("lora", "target_modules minus exclude_modules leaves no module to adapt");
  return on;
}

void LoraConfig::validate() const {
  if (rank < 1) throw ConfigError("lora", strcat("lora_rank must be >= 1, got ", rank));
  if (!(alpha > 0)) throw ConfigError("lora", strcat("lora_alpha must be > 0, got ", alpha));
  if (!(dropout >= 0 && dropout < 1))
    throw ConfigError("lora", strcat("lora_dropout must be in [0, 1), got ", dropout));
  (void)targets();
}

LoraState::LoraState(const ModelConfig& mc, const LoraConfig& lc) : cfg(lc) {
  cfg.validate();
  scale = static_cast<float>(cfg.scale());
  const auto on = cfg.targets();
  const int64_t L = mc.num_hidden_layers, r = cfg.rank;
  int64_t total = 0;
  for (int64_t l = 0; l < L; ++l)
    for (int t = 0; t < kLoraTargets; ++t) {
      if (!on[static_cast<size_t>(t)]) continue;
      const auto [in, out] = module_dims(mc, t);
      const std::string p = strcat("base_model.model.model.layers.", l, ".", kPaths[t], ".");
      specs.push_back({p + "lora_A.weight", {r, in}});
      offsets.push_back(total);
      total += r * in;
      specs.push_back({p + "lora_B.weight", {out, r}});
      offsets.push_back(total);
      total += out * r;
    }
  params.assign(static_cast<size_t>(total), 0.0f);
  layers.assign(static_cast<size_t>(L), {});
  size_t k = 0;
  for (int64_t l = 0; l < L; ++l)
    for (int t = 0; t < kLoraTargets; ++t) {
      if (!on[static_cast<size_t>(t)]) continue;
      auto& ll = layers[static_cast<size_t>(l)][static_cast<size_t>(t)];
      std::tie(ll.in, ll.out) = module_dims(mc, t);
      ll.a = params.data() + offsets[k];
      ll.b = params.data() + offsets[k + 1];
      k += 2;
    }
}

void LoraState::ensure_grads() {
  if (!grads.empty() || params.empty()) return;
  grads.assign(params.size(), 0.0f);
  size_t k = 0;
  for (auto& layer : layers)
    for (auto& ll : layer) {
      if (!ll.a) continue;
      ll.da = grads.data() + offsets[k];
      ll.db = grads.data() + offsets[k + 1];
      k += 2;
    }
}

void LoraState::prepare(int64_t n, int64_t layer_slots) {
  const int64_t r = cfg.rank;
  int64_t max_in = 0;
  for (auto& layer : layers)
    for (auto& ll : layer) max_in = std::max(max_in, ll.a ? ll.in : 0);
  if (n > cap_rows || static_cast<int64_t>(hbuf.size()) < layer_slots * kLoraTargets * n * r) {
    cap_rows = std::max(n, cap_rows);
    hbuf.assign(static_cast<size_t>(layer_slots * kLoraTargets * cap_rows * r), 0.0f);
    tmp.assign(static_cast<size_t>(cap_rows * max_in), 0.0f);
    dh.assign(static_cast<size_t>(cap_rows * r), 0.0f);
  }
  for (size_t l = 0; l < layers.size(); ++l)
    for (int t = 0; t < kLoraTargets; ++t) {
      const int64_t slot = (layer_slots == 1 ? 0 : static_cast<int64_t>(l)) * kLoraTargets + t;
      layers[l][static_cast<size_t>(t)].h = hbuf.data() + slot * cap_rows * r;
    }
}

void LoraState::begin_forward() {
  dropout_now = enabled && training && cfg.dropout > 0;
  if (dropout_now) ++forward_id;
}

// The dropout mask is a hash of (seed, forward, layer, module, element): the backward (and a
// checkpointed layer's recomputed forward) regenerate it instead of storing it.
const float* LoraState::dropped_input(size_t l, int t, const float* x, int64_t n) {
  if (!dropout_now) return x;
  const int64_t in = layers[l][static_cast<size_t>(t)].in;
  const double p = cfg.dropout;
  const float keep_scale = static_cast<float>(1.0 / (1.0 - p));
  const uint64_t key = mix(seed ^ mix(forward_id) ^ mix((static_cast<uint64_t>(l) << 8) | static_cast<uint64_t>(t)));
  float* out = tmp.data();
  parallel_for(
      n,
      [&](int64_t i) {
        for (int64_t j = 0; j < in; ++j) {
          const uint64_t h = mix(key + static_cast<uint64_t>(i * in + j));
          const bool keep = static_cast<double>(h >> 11) * 0x1.0p-53 >= p;
          out[i * in + j] = keep ? x[i * in + j] * keep_scale : 0.0f;
        }
      },
      in);
  return out;
}

void LoraState::forward(size_t l, int t, float* y, const float* x, int64_t n) {
  const LoraLinear& ll = layers[l][static_cast<size_t>(t)];
  if (!ll.a || !enabled) return;
  const int r = static_cast<int>(cfg.rank), in = static_cast<int>(ll.in), out = static_cast<int>(ll.out),
            rows = static_cast<int>(n);
  const float* xs = dropped_input(l, t, x, n);
  gemm(false, true, rows, r, in, 1.0f, xs, in, ll.a, in, 0.0f, ll.h, r);   // h = x A^T   [N, r]
  gemm(false, true, rows, out, r, scale, ll.h, r, ll.b, r, 1.0f, y, out);  // y += s h B^T
}

void LoraState::backward(size_t l, int t, float* dx, const float* dy, const float* x, int64_t n) {
  const LoraLinear& ll = layers[l][static_cast<size_t>(t)];
  if (!ll.a || !enabled) return;
  TRINITY_ASSERT(ll.da && ll.db, "LoRA backward before its gradients were allocated");
  const int r = static_cast<int>(cfg.rank), in = static_cast<int>(ll.in), out = static_cast<int>(ll.out),
            rows = static_cast<int>(n);
  gemm(false, false, rows, r, out, scale, dy, out, ll.b, r, 0.0f, dh.data(), r);  // dh = s dy B   [N, r]
  gemm(true, false, out, r, rows, scale, dy, out, ll.h, r, 1.0f, ll.db, r);       // dB += s dy^T h
  const float* xs = dropped_input(l, t, x, n);
  gemm(true, false, r, in, rows, 1.0f, dh.data(), r, xs, in, 1.0f, ll.da, in);  // dA += dh^T x
  if (!dropout_now) {
    gemm(false, false, rows, in, r, 1.0f, dh.data(), r, ll.a, in, 1.0f, dx, in);  // dx += dh A
    return;
  }
  // dx += dropout(dh A): the same mask and scale as the forward (dropout is linear in its input).
  std::vector<float> g(static_cast<size_t>(n * in));
  gemm(false, false, rows, in, r, 1.0f, dh.data(), r, ll.a, in, 0.0f, g.data(), in);
  const float* gd = dropped_input(l, t, g.data(), n);
  parallel_for(
      n * in, [&](int64_t i) { dx[i] += gd[i]; }, 1);
}

// ---- Transformer's LoRA methods ----

void Transformer::add_lora(const LoraConfig& cfg, uint64_t seed) {
  if (impl_->lora) throw ValueError("lora", "the model already has LoRA adapters");
  if (head_ != HeadKind::kLm)
    throw UnsupportedError("lora", "adapters on a value-head model (the critic trains fully)");
  auto st = std::make_unique<LoraState>(cfg_, cfg);
  st->seed = seed;
  Rng rng(seed);
  for (auto& layer : st->layers)
    for (auto& ll : layer) {
      if (!ll.a) continue;
      // PEFT: nn.init.kaiming_uniform_(A, a=sqrt(5)) -> U(-1/sqrt(in), 1/sqrt(in)); B = 0.
      const double bound = 1.0 / std::sqrt(static_cast<double>(ll.in));
      for (int64_t i = 0; i < cfg.rank * ll.in; ++i) ll.a[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
    }
  // Every base weight is frozen: their gradients are freed and never computed again.
  std::free(grads_);
  grads_ = nullptr;
  auto& im = *impl_;
  im.lg.assign(static_cast<size_t>(cfg_.num_hidden_layers), LayerParams{});
  im.dwte = im.dlnf = im.dwhead = im.dvw = im.dvb = nullptr;
  im.lora = std::move(st);
}

bool Transformer::has_lora() const {
  return impl_->lora != nullptr;
}

const LoraConfig& Transformer::lora_config() const {
  TRINITY_ASSERT(impl_->lora, "lora_config() of a model without adapters");
  return impl_->lora->cfg;
}

const std::vector<ParamSpec>& Transformer::lora_specs() const {
  static const std::vector<ParamSpec> none;
  return impl_->lora ? impl_->lora->specs : none;
}

float* Transformer::lora_param(const std::string& name) {
  auto* st = impl_->lora.get();
  if (!st) return nullptr;
  for (size_t k = 0; k < st->specs.size(); ++k)
    if (st->specs[k].name == name) return st->params.data() + st->offsets[k];
  return nullptr;
}

std::vector<tensor::Tensor> Transformer::lora_tensors(bool grads) const {
  std::vector<tensor::Tensor> out;
  auto* st = impl_->lora.get();
  if (!st) return out;
  if (grads) st->ensure_grads();
  float* base = grads ? st->grads.data() : st->params.data();
  for (size_t k = 0; k < st->specs.size(); ++k)
    out.push_back(tensor::Tensor::view(tensor::DType::kF32, st->specs[k].shape, base + st->offsets[k], nullptr));
  return out;
}

void Transformer::set_lora_enabled(bool on) {
  if (impl_->lora) impl_->lora->enabled = on;
}

bool Transformer::lora_enabled() const {
  return impl_->lora && impl_->lora->enabled;
}

void Transformer::set_training(bool on) {
  if (impl_->lora) impl_->lora->training = on;
}

float* Transformer::trainable_params() {
  if (impl_->lora) return impl_->lora->params.data();
  own_params();
  return params_;
}

float* Transformer::trainable_grads() {
  ensure_grads();
  return impl_->lora ? impl_->lora->grads.data() : grads_;
}

int64_t Transformer::num_trainable() const {
  return impl_->lora ? static_cast<int64_t>(impl_->lora->params.size()) : n_params_;
}

namespace {

// Calls fn(layer, module, A, B) for every adapted linear of `m`, layer-major; `views` are the
// adapters' tensors (or their gradients) in lora_specs order.
template <typename Fn>
void for_each_adapter_at(const Transformer& m, const std::vector<tensor::Tensor>& views, Fn&& fn) {
  const auto on = m.lora_config().targets();
  const auto& specs = m.lora_specs();
  size_t k = 0;
  for (int64_t l = 0; l < m.config().num_hidden_layers; ++l)
    for (int t = 0; t < kLoraTargets; ++t) {
      if (!on[static_cast<size_t>(t)]) continue;
      TRINITY_ASSERT(specs[k].name.find(kPaths[t]) != std::string::npos, "LoRA spec order");
      fn(l, t, views[k], views[k + 1]);
      k += 2;
    }
}

// The same, by the adapted weight's HF name.
template <typename Fn>
void for_each_adapter(const Transformer& m, const std::vector<tensor::Tensor>& views, Fn&& fn) {
  for_each_adapter_at(m, views, [&](int64_t l, int t, const tensor::Tensor& A, const tensor::Tensor& B) {
    fn(strcat("model.layers.", l, ".", kPaths[t], ".weight"), A, B);
  });
}

// W [out, in] += s · B [out, r] A [r, in]
void merge_into(float* w, const tensor::Tensor& A, const tensor::Tensor& B, float s) {
  const int64_t r = A.shape()[0], in = A.shape()[1], out = B.shape()[0];
  gemm(false, false, static_cast<int>(out), static_cast<int>(in), static_cast<int>(r), s, B.f32(), static_cast<int>(r),
       A.f32(), static_cast<int>(in), 1.0f, w, static_cast<int>(in));
}

}  // namespace

void for_each_lora_adapter(const Transformer& m,
                           const std::function<void(int64_t, int, const tensor::Tensor&, const tensor::Tensor&)>& fn) {
  if (m.has_lora()) for_each_adapter_at(m, m.lora_tensors(), fn);
}

Transformer merged_copy(const Transformer& m) {
  Transformer c(m.config(), m.head());  // fp32: bf16-held weights widen exactly
  c.copy_weights_from(m);
  if (!m.has_lora()) return c;
  const float s = static_cast<float>(m.lora_config().scale());
  for_each_adapter(m, m.lora_tensors(), [&](const std::string& name, const tensor::Tensor& A, const tensor::Tensor& B) {
    float* w = c.param(name);
    TRINITY_ASSERT(w, "merged_copy: no weight ", name);
    merge_into(w, A, B, s);
  });
  return c;
}

Transformer adapted_copy(const Transformer& m) {
  // A LoRA base is frozen: its weights (fp32 and bf16-held) are shared, not copied.
  Transformer c(m.config(), m.head(), m.weight_storage(), m.has_lora() ? &m : nullptr);
  c.copy_weights_from(m);
  if (!m.has_lora()) return c;
  c.add_lora(m.lora_config(), 0);
  const auto from = m.lora_tensors(), to = c.lora_tensors();
  for (size_t k = 0; k < from.size(); ++k)
    std::memcpy(const_cast<void*>(to[k].data()), from[k].data(), from[k].nbytes());
  c.set_lora_enabled(m.lora_enabled());
  return c;
}

void merged_weight(const Transformer& m, const tensor::Tensor& w, const std::string& name, float* out) {
  tensor::convert_to_f32(out, w.data(), w.dtype(), w.numel());
  if (!m.lora_enabled()) return;
  const float s = static_cast<float>(m.lora_config().scale());
  for_each_adapter(m, m.lora_tensors(), [&](const std::string& n, const tensor::Tensor& A, const tensor::Tensor& B) {
    if (n == name) merge_into(out, A, B, s);
  });
}

void save_merged(const Transformer& m, const std::string& dir, const SaveOptions& opts) {
  TRINITY_ASSERT(m.head() == HeadKind::kLm, "save_merged needs the LM head");
  const auto& specs = m.param_specs();
  const auto views = m.param_tensors();
  std::vector<NamedTensor> named;
  for (size_t k = 0; k < specs.size(); ++k) named.push_back({specs[k].name, &views[k]});
  const auto adapters = m.has_lora() ? m.lora_tensors() : std::vector<tensor::Tensor>{};
  if (m.has_lora()) {
    const float s = static_cast<float>(m.lora_config().scale());
    for_each_adapter(m, adapters, [&](const std::string& name, const tensor::Tensor& A, const tensor::Tensor& B) {
      const auto it = std::find_if(named.begin(), named.end(), [&](const NamedTensor& n) { return n.name == name; });
      TRINITY_ASSERT(it != named.end(), "save_merged: no weight ", name);
      const tensor::Tensor* base = it->tensor;
      it->make = [base, &A, &B, s] {
        tensor::Tensor w = base->to_f32();
        merge_into(w.f32(), A, B, s);
        return w;
      };
    });
  }
  save_checkpoint(dir, m.config(), named, opts);
}

}  // namespace trinity::model
