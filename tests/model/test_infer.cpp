// Inference forward with the paged KV cache vs the training forward: the logprob of every next
// token computed from forward_infer's logits (prefill, then one token per step) equals forward()'s
// within 1e-5; several sequences of different lengths in one step; n samples sharing a prompt's
// pages (fork) with copy-on-write of the partly filled page; an exhausted pool is a return value.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/tiny_config.h"
#include "core/rng.h"
#include "model/kv_cache.h"
#include "model/transformer.h"

using namespace trinity;
using namespace trinity::model;

namespace {

ModelConfig cfg_for(Arch arch) {
  return test::tiny_config({.arch = arch, .inter = 40, .head_dim = arch == Arch::kQwen3 ? 12 : 8,
                            .vocab = 29, .tie = arch == Arch::kQwen3});
}

double logprob_of(const float* logits, int64_t v, int32_t target) {
  double mx = logits[0];
  for (int64_t i = 1; i < v; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double s = 0;
  for (int64_t i = 0; i < v; ++i) s += std::exp(logits[i] - mx);
  return logits[target] - mx - std::log(s);
}

std::vector<int32_t> random_tokens(int n, int64_t vocab, uint64_t seed) {
  Rng r(seed);
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>(r.below(static_cast<uint64_t>(vocab))));
  return t;
}

}  // namespace

TEST(Infer, PrefillThenDecodeMatchesTrainingForward) {
  for (Arch arch : {Arch::kQwen2, Arch::kQwen3, Arch::kLlama}) {
    const auto cfg = cfg_for(arch);
    Transformer m(cfg);
    m.init_random(5, 0.25f);
    const auto seq = random_tokens(23, cfg.vocab_size, 9);
    std::vector<float> lp, ent;
    m.forward(Batch::next_token({seq}), lp, ent);

    KvCache cache(cfg, 8, 4);
    InferScratch sc;
    SeqKv kv;
    const int prompt = 7;
    ASSERT_TRUE(kv_reserve(cache, kv, prompt));
    std::vector<float> logits;
    std::vector<int32_t> toks(seq.begin(), seq.begin() + prompt);
    std::vector<int64_t> rows;
    for (int i = 0; i < prompt; ++i) rows.push_back(i);
    m.forward_infer(toks, {{&kv, 0, prompt}}, cache, rows, logits, sc);
    kv.len = prompt;
    for (int i = 0; i < prompt; ++i)
      EXPECT_NEAR(logprob_of(logits.data() + i * cfg.vocab_size, cfg.vocab_size, seq[static_cast<size_t>(i + 1)]),
                  lp[static_cast<size_t>(i)], 1e-5) << arch_name(arch) << " prefill row " << i;
    for (size_t t = prompt; t + 1 < seq.size(); ++t) {
      ASSERT_TRUE(kv_reserve(cache, kv, 1));
      m.forward_infer({seq[t]}, {{&kv, 0, 1}}, cache, {0}, logits, sc);
      kv.len += 1;
      EXPECT_NEAR(logprob_of(logits.data(), cfg.vocab_size, seq[t + 1]), lp[t], 1e-5)
          << arch_name(arch) << " decode position " << t;
    }
  }
}

TEST(Infer, MixedBatchAndForkedSamplesMatchAlone) {
  const auto cfg = cfg_for(Arch::kQwen2);
  Transformer m(cfg);
  m.init_random(6, 0.25f);
  const auto a = random_tokens(10, cfg.vocab_size, 1), b = random_tokens(6, cfg.vocab_size, 2);
  KvCache cache(cfg, 32, 4);
  InferScratch sc;
  // Reference: each sequence alone.
  auto alone = [&](const std::vector<int32_t>& s) {
    KvCache c2(cfg, 16, 4);
    SeqKv kv;
    kv_reserve(c2, kv, static_cast<int64_t>(s.size()));
    std::vector<float> lg;
    std::vector<int64_t> rows;
    for (size_t i = 0; i < s.size(); ++i) rows.push_back(static_cast<int64_t>(i));
    m.forward_infer(s, {{&kv, 0, static_cast<int64_t>(s.size())}}, c2, rows, lg, sc);
    return lg;
  };
  const auto la = alone(a), lb = alone(b);
  // Prefill a[0..5) and b together.
  SeqKv ka, kb;
  ASSERT_TRUE(kv_reserve(cache, ka, 5));
  ASSERT_TRUE(kv_reserve(cache, kb, 6));
  std::vector<int32_t> toks(a.begin(), a.begin() + 5);
  toks.insert(toks.end(), b.begin(), b.end());
  std::vector<float> lg;
  m.forward_infer(toks, {{&ka, 0, 5}, {&kb, 5, 11}}, cache, {4, 10}, lg, sc);
  ka.len = 5;
  kb.len = 6;
  for (int64_t v = 0; v < cfg.vocab_size; ++v) {
    EXPECT_NEAR(lg[static_cast<size_t>(v)], la[static_cast<size_t>(4 * cfg.vocab_size + v)], 1e-5);
    EXPECT_NEAR(lg[static_cast<size_t>(cfg.vocab_size + v)], lb[static_cast<size_t>(5 * cfg.vocab_size + v)], 1e-5);
  }
  // Fork a (5 tokens: page 1 is partly filled and now shared), continue both copies differently.
  SeqKv fa = kv_fork(cache, ka);
  EXPECT_EQ(cache.refcount(ka.pages[1]), 2);
  ASSERT_TRUE(kv_reserve(cache, fa, 1));
  EXPECT_NE(fa.pages[1], ka.pages[1]) << "copy on write of the shared partial page";
  EXPECT_EQ(fa.pages[0], ka.pages[0]) << "full pages stay shared";
  ASSERT_TRUE(kv_reserve(cache, ka, 1));
  m.forward_infer({a[5], 3}, {{&ka, 0, 1}, {&fa, 1, 2}}, cache, {0, 1}, lg, sc);
  ka.len = fa.len = 6;
  for (int64_t v = 0; v < cfg.vocab_size; ++v)
    EXPECT_NEAR(lg[static_cast<size_t>(v)], la[static_cast<size_t>(5 * cfg.vocab_size + v)], 1e-5);
  auto forked = a;
  forked.resize(5);
  forked.push_back(3);
  const auto lf = alone(forked);
  for (int64_t v = 0; v < cfg.vocab_size; ++v)
    EXPECT_NEAR(lg[static_cast<size_t>(cfg.vocab_size + v)], lf[static_cast<size_t>(5 * cfg.vocab_size + v)], 1e-5);
  kv_free(cache, ka);
  kv_free(cache, kb);
  kv_free(cache, fa);
  EXPECT_EQ(cache.free_pages(), cache.num_pages()) << "every page returned";
}

TEST(Infer, ExhaustedPoolIsAReturnValue) {
  const auto cfg = cfg_for(Arch::kLlama);
  KvCache cache(cfg, 3, 4);
  SeqKv a, b;
  EXPECT_TRUE(kv_reserve(cache, a, 9));   // 3 pages
  a.len = 9;
  EXPECT_FALSE(kv_reserve(cache, b, 1));  // none left
  EXPECT_TRUE(b.pages.empty());
  EXPECT_EQ(kv_pages_needed(cache, a, 3), 0);
  EXPECT_EQ(kv_pages_needed(cache, a, 4), 1);
  kv_free(cache, a);
  EXPECT_TRUE(kv_reserve(cache, b, 12));
}
