// Transformer-level tests: a packed batch gives each sequence exactly what it gets alone;
// temperature-scaled logprobs are normalised; the value head and the entropy path backpropagate
// correctly (finite differences through the whole model, in double-checked float); checkpoints
// round-trip; bad tokens are clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/tiny_config.h"
#include "core/error.h"
#include "core/rng.h"
#include "model/transformer.h"
#include "tensor/tensor.h"

using namespace trinity;
using namespace trinity::model;

namespace {

ModelConfig tiny(Arch arch, bool tie = false) {
  return test::tiny_config({.arch = arch, .head_dim = arch == Arch::kQwen3 ? 12 : 8, .tie = tie});
}

std::vector<std::vector<int32_t>> random_seqs(std::vector<int> lens, int64_t vocab, uint64_t seed) {
  Rng r(seed);
  std::vector<std::vector<int32_t>> out;
  for (int n : lens) {
    std::vector<int32_t> s;
    for (int i = 0; i < n; ++i) s.push_back(static_cast<int32_t>(r.below(static_cast<uint64_t>(vocab))));
    out.push_back(s);
  }
  return out;
}

std::string temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("trinity_test_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

}  // namespace

TEST(Transformer, PackedBatchEqualsSequencesAlone) {
  for (Arch arch : {Arch::kQwen2, Arch::kQwen3, Arch::kLlama}) {
    Transformer m(tiny(arch, arch == Arch::kQwen3));
    m.init_random(3, 0.2f);
    auto seqs = random_seqs({9, 1, 17, 4}, 37, 11);
    std::vector<float> lp, ent;
    m.forward(Batch::next_token(seqs), lp, ent);
    size_t off = 0;
    for (const auto& s : seqs) {
      std::vector<float> lp1, ent1;
      m.forward(Batch::next_token({s}), lp1, ent1);
      ASSERT_EQ(lp1.size(), s.size() - 1);
      for (size_t i = 0; i < lp1.size(); ++i) {
        EXPECT_NEAR(lp[off + i], lp1[i], 1e-5) << arch_name(arch);
        EXPECT_NEAR(ent[off + i], ent1[i], 1e-5) << arch_name(arch);
      }
      off += lp1.size();
    }
    EXPECT_EQ(off, lp.size());
  }
}

TEST(Transformer, TemperatureScaledLogprobsAreNormalised) {
  Transformer m(tiny(Arch::kQwen2));
  m.init_random(5, 0.3f);
  const std::vector<int32_t> prefix = {4, 9, 2, 30};
  for (float temp : {0.5f, 1.0f, 2.0f}) {
    double total = 0, ent_at_temp = 0;
    for (int32_t v = 0; v < 37; ++v) {
      auto s = prefix;
      s.push_back(v);
      std::vector<float> lp, ent;
      m.forward(Batch::next_token({s}), lp, ent, 1.0f / temp);
      total += std::exp(static_cast<double>(lp.back()));
      ent_at_temp = ent.back();
    }
    EXPECT_NEAR(total, 1.0, 1e-5) << "temperature " << temp;
    EXPECT_GT(ent_at_temp, 0.0);
  }
}

namespace {

// Central differences of a scalar loss with respect to a sample of parameters.
template <typename Loss>
void check_param_grads(Transformer& m, const std::vector<std::string>& names, Loss&& loss) {
  for (const auto& name : names) {
    float* p = m.param(name);
    const float* g = m.grad(name);
    ASSERT_NE(p, nullptr) << name;
    for (int idx : {0, 3, 7}) {
      const float orig = p[idx];
      const float eps = 1e-2f;
      p[idx] = orig + eps;
      const double lp = loss();
      p[idx] = orig - eps;
      const double lm = loss();
      p[idx] = orig;
      const double fd = (lp - lm) / (2.0 * eps);
      EXPECT_NEAR(g[idx], fd, 2e-2 * std::max(1.0, std::abs(fd))) << name << "[" << idx << "]";
    }
  }
}

}  // namespace

TEST(Transformer, EntropyGradientMatchesFiniteDifferences) {
  Transformer m(tiny(Arch::kQwen3, true));
  m.init_random(7, 0.3f);
  auto seqs = random_seqs({6, 5}, 37, 13);
  const auto batch = Batch::next_token(seqs);
  std::vector<float> lp, ent;
  // loss = sum(0.7 * logprob) + sum(1.3 * entropy)
  auto loss = [&] {
    m.forward(batch, lp, ent);
    double s = 0;
    for (size_t i = 0; i < lp.size(); ++i) s += 0.7 * lp[i] + 1.3 * ent[i];
    return s;
  };
  m.zero_grad();
  loss();
  m.backward(std::vector<float>(lp.size(), 0.7f), std::vector<float>(ent.size(), 1.3f));
  check_param_grads(m, {"model.embed_tokens.weight", "model.layers.0.self_attn.q_norm.weight",
                        "model.layers.1.mlp.down_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                        "model.norm.weight"},
                    loss);
}

TEST(Transformer, ValueHeadGradientMatchesFiniteDifferences) {
  Transformer m(tiny(Arch::kQwen2), HeadKind::kValue);
  m.init_random(9, 0.3f);
  auto seqs = random_seqs({7, 3}, 37, 17);
  const auto batch = Batch::next_token(seqs);
  std::vector<float> vals;
  std::vector<float> w(10);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(i) - 0.4f;
  auto loss = [&] {
    m.forward_values(batch, vals);
    double s = 0;
    for (size_t i = 0; i < vals.size(); ++i) s += w[i] * vals[i];
    return s;
  };
  m.zero_grad();
  loss();
  ASSERT_EQ(vals.size(), 10u);
  m.backward_values(w);
  check_param_grads(m, {"score.weight", "score.bias", "model.layers.1.self_attn.v_proj.bias",
                        "model.layers.0.mlp.gate_proj.weight", "model.embed_tokens.weight"},
                    loss);
}

TEST(Transformer, SaveLoadRoundTripF32AndBf16) {
  Transformer m(tiny(Arch::kLlama));
  m.init_random(21, 0.1f);
  const std::string d32 = temp_dir("f32"), d16 = temp_dir("bf16");
  m.save(d32);
  SaveOptions o;
  o.dtype = tensor::DType::kBF16;
  m.save(d16, o);
  Transformer a = Transformer::load(d32), b = Transformer::load(d16);
  ASSERT_EQ(a.num_params(), m.num_params());
  for (int64_t i = 0; i < m.num_params(); ++i) {
    ASSERT_EQ(a.params()[i], m.params()[i]);
    ASSERT_EQ(b.params()[i], tensor::bf16_to_f32(tensor::f32_to_bf16(m.params()[i])));
  }
  EXPECT_EQ(b.config().torch_dtype, "bfloat16");
  std::filesystem::remove_all(d32);
  std::filesystem::remove_all(d16);
}

TEST(Transformer, BadTokenIsAClearError) {
  Transformer m(tiny(Arch::kQwen2));
  std::vector<float> lp, ent;
  try {
    m.forward(Batch::next_token({{1, 2, 99}}), lp, ent);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("token id 99"), std::string::npos) << e.what();
  }
}

TEST(Transformer, LoadMissingDirectoryNamesIt) {
  try {
    Transformer::load("/nonexistent/model_dir");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model_dir"), std::string::npos) << e.what();
  }
}
