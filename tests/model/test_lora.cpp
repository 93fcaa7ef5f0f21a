// LoRA adapters and activation checkpointing on the Transformer: a new adapter leaves the model
// unchanged; adapter gradients match finite differences (A and B of every module, 3 families); the
// base is frozen (no base gradients, trainable = adapters); merging equals the unmerged forward;
// the PEFT directory round-trips and bad ones are clear errors; dropout only in training forwards;
// checkpointed gradients equal the plain ones.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/tiny_config.h"
#include "core/error.h"
#include "core/file.h"
#include "core/rng.h"
#include "lora_test_util.h"
#include "model/lora.h"
#include "model/lora_impl.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "test_util.h"

using namespace trinity;
using namespace trinity::model;
using json = nlohmann::json;

namespace {

ModelConfig tiny(Arch arch) {
  return model::testing::tiny_lora_config(arch);
}
Batch batch_of(std::vector<int> lens, uint64_t seed) {
  return model::testing::random_batch(lens, seed);
}

LoraConfig lora(int64_t rank, std::vector<std::string> targets = {"all-linear"}) {
  LoraConfig c;
  c.rank = rank;
  c.alpha = 2.0 * static_cast<double>(rank);
  c.target_modules = std::move(targets);
  return c;
}

// Random non-zero B (a fresh adapter has B = 0, where dA would be 0 too).
void randomise(Transformer& m, uint64_t seed, float std = 0.3f) {
  Rng r(seed);
  for (auto& t : m.lora_tensors())
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(r.normal()) * std;
}

std::vector<float> logprobs(Transformer& m, const Batch& b) {
  std::vector<float> lp, ent;
  m.forward(b, lp, ent);
  return lp;
}

}  // namespace

TEST(Lora, NewAdapterLeavesTheModelUnchangedAndInitialisesAsPeft) {
  Transformer m(tiny(Arch::kQwen2));
  m.init_random(1, 0.2f);
  const Batch b = batch_of({7, 3}, 2);
  const auto base = logprobs(m, b);
  m.add_lora(lora(4), 9);
  EXPECT_EQ(logprobs(m, b), base);
  // 2 layers x 7 modules x (A, B)
  ASSERT_EQ(m.lora_specs().size(), 28u);
  EXPECT_EQ(m.lora_specs()[0].name, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
  EXPECT_EQ(m.lora_specs()[0].shape, (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(m.lora_specs()[1].name, "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight");
  EXPECT_EQ(m.lora_specs()[1].shape, (std::vector<int64_t>{32, 4}));
  EXPECT_EQ(m.lora_specs()[27].name, "base_model.model.model.layers.1.mlp.down_proj.lora_B.weight");
  const auto views = m.lora_tensors();
  const float bound = 1.0f / std::sqrt(32.0f);
  double sumsq = 0;
  for (int64_t i = 0; i < views[0].numel(); ++i) {
    EXPECT_LE(std::abs(views[0].f32()[i]), bound);
    sumsq += views[0].f32()[i] * views[0].f32()[i];
  }
  EXPECT_GT(sumsq, 0.0);
  for (int64_t i = 0; i < views[1].numel(); ++i) EXPECT_EQ(views[1].f32()[i], 0.0f);
  EXPECT_EQ(m.num_trainable(), [&] {
    int64_t n = 0;
    for (const auto& t : views) n += t.numel();
    return n;
  }());
}

TEST(Lora, AdapterGradientsMatchFiniteDifferencesAndTheBaseIsFrozen) {
  for (Arch arch : {Arch::kQwen2, Arch::kQwen3, Arch::kLlama}) {
    Transformer m(tiny(arch));
    m.init_random(3, 0.2f);
    m.add_lora(lora(3), 4);
    randomise(m, 5);
    const Batch b = batch_of({6, 4}, 6);
    std::vector<float> lp, ent;
    auto loss = [&] {
      m.forward(b, lp, ent);
      double s = 0;
      for (size_t i = 0; i < lp.size(); ++i) s += 0.7 * lp[i] + 0.4 * ent[i];
      return s;
    };
    m.zero_grad();
    loss();
    m.backward(std::vector<float>(lp.size(), 0.7f), std::vector<float>(ent.size(), 0.4f));
    EXPECT_EQ(m.grads(), nullptr) << "a frozen base has no gradients";
    const auto grads = m.lora_tensors(true);
    auto params = m.lora_tensors();
    for (size_t k = 0; k < params.size(); ++k) {
      float* p = params[k].f32();
      const float* g = grads[k].f32();
      for (int64_t idx : {int64_t{0}, params[k].numel() / 2, params[k].numel() - 1}) {
        const float orig = p[idx];
        const float eps = 1e-2f;
        p[idx] = orig + eps;
        const double up = loss();
        p[idx] = orig - eps;
        const double dn = loss();
        p[idx] = orig;
        const double fd = (up - dn) / (2.0 * eps);
        EXPECT_NEAR(g[idx], fd, 2e-2 * std::max(1.0, std::abs(fd)))
            << arch_name(arch) << " " << m.lora_specs()[k].name << "[" << idx << "]";
      }
    }
  }
}

TEST(Lora, MergedCopyComputesTheSameModelAndDisablingGivesTheBase) {
  for (Arch arch : {Arch::kQwen2, Arch::kQwen3, Arch::kLlama}) {
    Transformer m(tiny(arch));
    m.init_random(7, 0.2f);
    const Batch b = batch_of({9, 5, 2}, 8);
    const auto base = logprobs(m, b);
    m.add_lora(lora(2, {"q_proj", "v_proj", "down_proj"}), 1);
    randomise(m, 2);
    const auto adapted = logprobs(m, b);
    Transformer merged = merged_copy(m);
    EXPECT_FALSE(merged.has_lora());
    const auto got = logprobs(merged, b);
    double diff = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], adapted[i], 2e-5) << arch_name(arch) << " row " << i;
      diff = std::max(diff, static_cast<double>(std::abs(adapted[i] - base[i])));
    }
    EXPECT_GT(diff, 1e-3) << "the adapter must change the model for this test to mean anything";
    m.set_lora_enabled(false);
    EXPECT_EQ(logprobs(m, b), base);
    m.set_lora_enabled(true);
  }
}

TEST(Lora, TargetModulesAndExclusions) {
  LoraConfig c = lora(2, {"all-linear"});
  c.exclude_modules = {"o_proj", "mlp.down_proj"};
  const auto on = c.targets();
  EXPECT_TRUE(on[0] && on[1] && on[2] && on[4] && on[5]);
  EXPECT_FALSE(on[3] || on[6]);
  EXPECT_THROW(lora(2, {"qkv_proj"}).targets(), ConfigError);
  LoraConfig none = lora(2, {"q_proj"});
  none.exclude_modules = {"q_proj"};
  EXPECT_THROW(none.validate(), ConfigError);
  EXPECT_THROW(lora(0).validate(), ConfigError);
  Transformer m(tiny(Arch::kQwen2));
  m.add_lora(lora(2, {"k_proj"}), 0);
  EXPECT_EQ(m.lora_specs().size(), 4u);
  EXPECT_THROW(m.add_lora(lora(2), 0), ValueError);
}

TEST(Lora, PeftDirectoryRoundTripsAndBadOnesAreClearErrors) {
  Transformer m(tiny(Arch::kLlama));
  m.init_random(3, 0.2f);
  LoraConfig c = lora(4, {"q_proj", "k_proj", "v_proj", "o_proj"});
  c.dropout = 0.05;
  m.add_lora(c, 1);
  randomise(m, 9);
  const model::testing::ScratchDir scratch;
  const std::string dir = scratch.file("peft");
  save_adapter(m, dir, "org/base-model");
  const json cfg = json::parse(file::read_all(dir + "/adapter_config.json"));
  EXPECT_EQ(cfg["peft_type"], "LORA");
  EXPECT_EQ(cfg["task_type"], "CAUSAL_LM");
  EXPECT_EQ(cfg["r"], 4);
  EXPECT_EQ(cfg["lora_alpha"], 8.0);
  EXPECT_EQ(cfg["base_model_name_or_path"], "org/base-model");
  EXPECT_EQ(cfg["target_modules"], json({"q_proj", "k_proj", "v_proj", "o_proj"}));
  const auto f = SafetensorsFile::open(dir + "/adapter_model.safetensors");
  EXPECT_EQ(f.names().size(), 16u);
  EXPECT_TRUE(f.contains("base_model.model.model.layers.1.self_attn.o_proj.lora_B.weight"));

  Transformer m2(tiny(Arch::kLlama));
  std::memcpy(m2.params(), m.params(), sizeof(float) * static_cast<size_t>(m.num_params()));
  load_adapter(m2, dir);
  EXPECT_EQ(m2.lora_config(), m.lora_config());
  const Batch b = batch_of({8, 3}, 4);
  EXPECT_EQ(logprobs(m2, b), logprobs(m, b));

  // A different base shape: the tensor is named with its shapes.
  Transformer wrong(test::tiny_config({.arch = Arch::kLlama, .hidden = 48, .head_dim = 12}));
  try {
    load_adapter(wrong, dir);
    FAIL() << "loaded an adapter of another shape";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("has shape [4, 32], expected [4, 48]"), std::string::npos) << e.what();
  }
  // PEFT features trinity does not implement name their key.
  json dora = cfg;
  dora["use_dora"] = true;
  file::write_atomic(dir + "/adapter_config.json", dora.dump());
  Transformer m3(tiny(Arch::kLlama));
  try {
    load_adapter(m3, dir);
    FAIL() << "accepted DoRA";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("use_dora"), std::string::npos) << e.what();
  }
  // A target module without tensors in the file.
  json more = cfg;
  more["target_modules"] = {"q_proj", "gate_proj"};
  file::write_atomic(dir + "/adapter_config.json", more.dump());
  try {
    load_adapter(m3, dir);
    FAIL() << "loaded an adapter with missing tensors";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("mlp.gate_proj.lora_A.weight"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_adapter_config(dir + "/nope"), IoError);
}

TEST(Lora, DropoutOnlyInTrainingForwardsAndItsBackwardUsesTheSameMask) {
  Transformer m(tiny(Arch::kQwen2));
  m.init_random(3, 0.2f);
  LoraConfig c = lora(4);
  c.dropout = 0.3;
  m.add_lora(c, 1);
  randomise(m, 2);
  const Batch b = batch_of({7, 5}, 3);
  const auto eval1 = logprobs(m, b);
  EXPECT_EQ(logprobs(m, b), eval1);  // eval forwards: no dropout, deterministic
  m.set_training(true);
  const auto t1 = logprobs(m, b);
  const auto t2 = logprobs(m, b);
  EXPECT_NE(t1, eval1);
  EXPECT_NE(t1, t2);  // a new mask per training forward
  m.set_training(false);
  EXPECT_EQ(logprobs(m, b), eval1);
}

// One adapted linear with dropout, at the kernel level: within one forward id the mask is fixed, so
// the backward's dA, dB and dx must match finite differences of that forward.
TEST(Lora, DropoutBackwardMatchesFiniteDifferencesOfItsForward) {
  const ModelConfig mc = tiny(Arch::kQwen2);
  LoraConfig c = lora(3, {"gate_proj"});
  c.dropout = 0.4;
  LoraState st(mc, c);
  st.seed = 17;
  st.training = true;
  st.prepare(5, mc.num_hidden_layers);
  st.ensure_grads();
  Rng r(3);
  for (auto& v : st.params) v = static_cast<float>(r.normal()) * 0.5f;
  const int64_t n = 5, in = mc.hidden_size, out = mc.intermediate_size;
  std::vector<float> x(static_cast<size_t>(n * in)), w(static_cast<size_t>(n * out));
  for (auto& v : x) v = static_cast<float>(r.normal());
  for (auto& v : w) v = static_cast<float>(r.normal());
  st.begin_forward();
  ASSERT_TRUE(st.dropout_now);
  auto loss = [&] {  // sum(w * y), y = lora(x)
    std::vector<float> y(static_cast<size_t>(n * out), 0.0f);
    st.forward(1, 4, y.data(), x.data(), n);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(w[i]) * y[i];
    return s;
  };
  loss();
  std::vector<float> dx(static_cast<size_t>(n * in), 0.0f);
  st.backward(1, 4, dx.data(), w.data(), x.data(), n);
  const LoraLinear& ll = st.layers[1][4];
  auto check = [&](float* p, const float* g, int64_t count, const char* what) {
    int zero_grads = 0;
    for (int64_t i = 0; i < count; i += std::max<int64_t>(1, count / 17)) {
      const float orig = p[i], eps = 1e-2f;
      p[i] = orig + eps;
      const double up = loss();
      p[i] = orig - eps;
      const double dn = loss();
      p[i] = orig;
      const double fd = (up - dn) / (2.0 * eps);
      EXPECT_NEAR(g[i], fd, 1e-3 * std::max(1.0, std::abs(fd))) << what << "[" << i << "]";
      zero_grads += g[i] == 0.0f;
    }
    return zero_grads;
  };
  check(ll.a, ll.da, c.rank * in, "A");
  check(ll.b, ll.db, out * c.rank, "B");
  // dx is zero exactly where the mask dropped the input.
  const int dropped = check(x.data(), dx.data(), n * in, "x");
  EXPECT_GT(dropped, 0) << "p = 0.4 must drop some of the sampled inputs";
}

TEST(GradientCheckpointing, SameGradientsWithAndWithoutLora) {
  for (Arch arch : {Arch::kQwen2, Arch::kQwen3, Arch::kLlama}) {
    for (bool with_lora : {false, true}) {
      auto run = [&](bool ckpt, std::vector<float>& lp_out) {
        Transformer m(tiny(arch));
        m.init_random(11, 0.2f);
        if (with_lora) {
          m.add_lora(lora(2), 3);
          randomise(m, 4);
        }
        m.set_gradient_checkpointing(ckpt);
        const Batch b = batch_of({9, 4, 6}, 12);
        std::vector<float> ent;
        m.zero_grad();
        m.forward(b, lp_out, ent);
        m.backward(std::vector<float>(lp_out.size(), -1.0f), std::vector<float>(ent.size(), 0.5f));
        const auto g = with_lora ? m.lora_tensors(true) : m.grad_tensors();
        std::vector<float> flat;
        for (const auto& t : g) flat.insert(flat.end(), t.f32(), t.f32() + t.numel());
        return std::make_pair(flat, m.activation_bytes());
      };
      std::vector<float> lp0, lp1;
      const auto [g0, bytes0] = run(false, lp0);
      const auto [g1, bytes1] = run(true, lp1);
      EXPECT_EQ(lp0, lp1);
      ASSERT_EQ(g0.size(), g1.size());
      for (size_t i = 0; i < g0.size(); ++i)
        ASSERT_NEAR(g0[i], g1[i], 1e-6f * std::max(1.0f, std::abs(g0[i]))) << arch_name(arch) << " lora " << with_lora;
      EXPECT_LT(bytes1, bytes0) << "checkpointing keeps fewer activations";
    }
  }
}
