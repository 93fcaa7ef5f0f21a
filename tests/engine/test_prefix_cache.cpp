// Prefix cache: the PrefixCache index over KV pages (chain keys, hits, LRU eviction of cache-only
// pages, clear) and the engine with it on vs off: multi-turn prompts reuse cached pages with bitwise
// equal tokens and logprobs, a tight KV budget evicts and still finishes every request, and a weight
// swap drops the cache.
#include <gtest/gtest.h>

#include "common/tiny_config.h"
#include "engine/engine.h"
#include "model/prefix_cache.h"

using namespace trinity;
using namespace trinity::engine;

namespace {

model::ModelConfig cfg() {
  return test::tiny_config({.arch = model::Arch::kQwen3, .vocab = 41, .eos = {40}});
}

std::shared_ptr<model::Transformer> make_model(uint64_t seed) {
  auto m = std::make_shared<model::Transformer>(cfg());
  m->init_random(seed, 0.35f);
  return m;
}

int64_t page_bytes(int64_t ps) {
  const auto c = cfg();
  return 2 * c.num_hidden_layers * ps * c.num_key_value_heads * c.head_dim * 4;
}

EngineOptions opts(bool prefix, int64_t kv_bytes = 8 << 20) {
  EngineOptions o;
  o.kv_cache_bytes = kv_bytes;
  o.page_size = 4;
  o.prefix_cache = prefix;
  return o;
}

// Pages holding `tokens` (full pages only), as a prefill would leave them.
model::SeqKv filled(model::KvCache& kv, int64_t n_tokens) {
  model::SeqKv s;
  EXPECT_TRUE(model::kv_reserve(kv, s, n_tokens));
  s.len = n_tokens;
  return s;
}

}  // namespace

TEST(PrefixCache, ChainHitsMissesAndCaps) {
  model::KvCache kv(cfg(), 32, 4);
  model::PrefixCache pc(kv);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // 2 full pages + 2 tokens
  model::SeqKv s = filled(kv, 10);
  EXPECT_TRUE(pc.lookup(a, 10).empty());
  pc.insert(a, s.pages);
  EXPECT_EQ(pc.pages(), 2);
  EXPECT_EQ(kv.refcount(s.pages[0]), 2);
  EXPECT_EQ(kv.refcount(s.pages[2]), 1) << "the partial page is not cached";
  auto hit = pc.lookup(a, 10);
  ASSERT_EQ(hit.size(), 2u);
  EXPECT_EQ(hit[0], s.pages[0]);
  EXPECT_EQ(hit[1], s.pages[1]);
  EXPECT_EQ(kv.refcount(s.pages[0]), 3) << "a hit is retained for the caller";
  for (int32_t p : hit) kv.release(p);
  EXPECT_EQ(pc.lookup(a, 1).size(), 1u) << "max_pages caps the reuse";
  kv.release(s.pages[0]);
  // The same second block after a different first block is a different chain: no hit beyond page 0.
  const std::vector<int32_t> b = {1, 2, 3, 9, 5, 6, 7, 8};
  EXPECT_TRUE(pc.lookup(b, 2).empty());
  const std::vector<int32_t> c = {1, 2, 3, 4, 5, 6, 7, 0};
  auto hc = pc.lookup(c, 2);
  EXPECT_EQ(hc.size(), 1u);
  for (int32_t p : hc) kv.release(p);
  model::kv_free(kv, s);
  EXPECT_EQ(pc.evictable(), 2);
  pc.clear();
  EXPECT_EQ(kv.free_pages(), kv.num_pages());
}

TEST(PrefixCache, EvictsLeastRecentlyUsedCacheOnlyPagesLeavesFirst) {
  model::KvCache kv(cfg(), 6, 4);
  model::PrefixCache pc(kv);
  const std::vector<int32_t> a = {1, 1, 1, 1, 2, 2, 2, 2};
  const std::vector<int32_t> b = {3, 3, 3, 3, 4, 4, 4, 4};
  model::SeqKv sa = filled(kv, 8), sb = filled(kv, 8);
  pc.insert(a, sa.pages);
  pc.insert(b, sb.pages);
  model::kv_free(kv, sa);  // a: cache-only; b: still used by its sequence
  EXPECT_EQ(kv.free_pages(), 2);
  EXPECT_EQ(pc.evictable(), 2);
  EXPECT_EQ(pc.make_free(3), 1);
  EXPECT_EQ(pc.evictions(), 1);
  EXPECT_EQ(pc.lookup(a, 2).size(), 1u) << "the leaf went first, the prefix page stays";
  kv.release(sa.pages[0]);
  EXPECT_EQ(pc.make_free(6), 1) << "pages a sequence still uses are never evicted";
  EXPECT_EQ(kv.free_pages(), 4);
  auto hb = pc.lookup(b, 2);
  EXPECT_EQ(hb.size(), 2u);
  for (int32_t p : hb) kv.release(p);
  model::kv_free(kv, sb);
}

// A 6-turn conversation: each prompt = previous prompt + previous response + a new user message.
TEST(EnginePrefixCache, MultiTurnReusesPagesWithBitwiseEqualLogprobs) {
  auto m = make_model(11);
  Engine on(m, 0, nullptr, opts(true)), off(m, 0, nullptr, opts(false));
  SamplingParams p;
  p.max_tokens = 7;
  p.ignore_eos = true;
  p.n = 2;
  p.seed = 3;
  std::vector<int32_t> prompt = {5, 9, 2, 7, 1, 3, 3, 8, 6};
  for (int turn = 0; turn < 6; ++turn) {
    auto a = on.generate(prompt, p), b = off.generate(prompt, p);
    ASSERT_EQ(a.completions.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(a.completions[k].token_ids, b.completions[k].token_ids) << "turn " << turn;
      ASSERT_EQ(a.completions[k].logprobs.size(), b.completions[k].logprobs.size());
      for (size_t i = 0; i < a.completions[k].logprobs.size(); ++i)
        EXPECT_EQ(a.completions[k].logprobs[i], b.completions[k].logprobs[i]) << "turn " << turn << " i " << i;
    }
    const auto& resp = a.completions[0].token_ids;
    prompt.insert(prompt.end(), resp.begin(), resp.end());
    for (int i = 0; i < 3; ++i) prompt.push_back(static_cast<int32_t>((turn * 7 + i * 5) % 40));
  }
  const auto so = on.stats(), sf = off.stats();
  EXPECT_GT(so.prefix_cache_hit_tokens, 0);
  EXPECT_EQ(so.prefix_cache_query_tokens, sf.prompt_tokens);
  EXPECT_EQ(so.prompt_tokens, sf.prompt_tokens - so.prefix_cache_hit_tokens) << "hits skip their prefill";
  // Turn t's prompt has 9 + 10 t tokens; it reuses every full page of turn t-1's prompt.
  EXPECT_EQ(so.prefix_cache_hit_tokens, 4 * (2 + 4 + 7 + 9 + 12));
  EXPECT_GT(so.prefix_cache_pages, 0);
  EXPECT_EQ(so.kv_pages_free, so.kv_pages_total) << "cached pages no request uses count as free";
  EXPECT_EQ(sf.prefix_cache_hit_tokens, 0);
  EXPECT_EQ(sf.prefix_cache_pages, 0);
}

TEST(EnginePrefixCache, TightBudgetEvictsAndFinishesEveryRequest) {
  auto m = make_model(12);
  // 12 pages of 4 tokens; each request commits 3 + 1 x (2 + 1) = 6 pages.
  Engine on(m, 0, nullptr, opts(true, page_bytes(4) * 12)), off(m, 0, nullptr, opts(false, 8 << 20));
  SamplingParams p;
  p.max_tokens = 8;
  p.ignore_eos = true;
  p.seed = 9;
  for (int i = 0; i < 10; ++i) {
    std::vector<int32_t> prompt;
    for (int j = 0; j < 12; ++j) prompt.push_back(static_cast<int32_t>((i * 13 + j * 3) % 40));
    auto a = on.generate(prompt, p), b = off.generate(prompt, p);
    ASSERT_TRUE(a.error.empty()) << a.error;
    EXPECT_EQ(a.completions[0].token_ids, b.completions[0].token_ids);
    EXPECT_EQ(a.completions[0].logprobs, b.completions[0].logprobs);
  }
  const auto s = on.stats();
  EXPECT_GT(s.prefix_cache_evictions, 0);
  EXPECT_LE(s.prefix_cache_pages, 12);
  EXPECT_EQ(s.kv_pages_free, s.kv_pages_total);
}

TEST(EnginePrefixCache, WeightSwapDropsTheCache) {
  auto m1 = make_model(13), m2 = make_model(14);
  Engine on(m1, 1, nullptr, opts(true));
  SamplingParams p;
  p.max_tokens = 5;
  p.ignore_eos = true;
  p.seed = 1;
  const std::vector<int32_t> prompt = {4, 8, 15, 16, 23, 42 % 40, 7, 7, 1};
  on.generate(prompt, p);
  on.generate(prompt, p);
  auto s = on.stats();
  EXPECT_EQ(s.prefix_cache_hit_tokens, 8);
  EXPECT_EQ(s.prefix_cache_pages, 2);
  on.update_weights(m2, 2);
  s = on.stats();
  EXPECT_EQ(s.prefix_cache_pages, 0);
  auto a = on.generate(prompt, p);
  EXPECT_EQ(on.stats().prefix_cache_hit_tokens, 8) << "no hit on KV of the old weights";
  Engine fresh(m2, 2, nullptr, opts(false));
  auto b = fresh.generate(prompt, p);
  EXPECT_EQ(a.completions[0].token_ids, b.completions[0].token_ids);
  EXPECT_EQ(a.completions[0].logprobs, b.completions[0].logprobs);
}
