// Batch invariance of the engine: a request's tokens AND logprobs are the same bits whether it runs
// alone or batched with others (different step-mates, different prefill chunking of its prompt,
// different tile shapes in the kernels). Same seed + config => same rollouts => same checkpoint,
// whatever the runner concurrency (docs/running.md, "Determinism").
#include <gtest/gtest.h>

#include <cstring>

#include "common/tiny_config.h"
#include "engine/engine.h"

using namespace trinity;
using namespace trinity::engine;

namespace {

struct Job {
  std::vector<int32_t> prompt;
  SamplingParams p;
};

std::vector<Job> jobs() {
  std::vector<Job> out;
  for (int i = 0; i < 10; ++i) {
    Job j;
    for (int t = 0; t < 3 + 3 * i; ++t) j.prompt.push_back(static_cast<int32_t>((7 * t + 13 * i + 1) % 299));
    j.p.max_tokens = 6 + i % 4;
    j.p.n = 1 + i % 3;
    j.p.seed = static_cast<uint64_t>(1000 + i);
    j.p.ignore_eos = i % 2 == 0;
    j.p.temperature = i % 3 == 0 ? 0.8 : 1.0;
    if (i % 4 == 1) j.p.top_k = 20;
    out.push_back(j);
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

}  // namespace

TEST(EngineBatchInvariance, LogprobsAreBitwiseTheSameAloneOrBatched) {
  auto m = std::make_shared<model::Transformer>(test::tiny_config({.hidden = 64,
                                                                   .inter = 160,
                                                                   .layers = 2,
                                                                   .heads = 4,
                                                                   .kv_heads = 2,
                                                                   .head_dim = 16,
                                                                   .vocab = 300,
                                                                   .eos = {299}}));
  m->init_random(21, 0.3f);
  for (WeightFormat wf : {WeightFormat::kF32Packed, WeightFormat::kBF16}) {
    EngineOptions o;
    o.kv_cache_bytes = 16 << 20;
    o.page_size = 4;
    o.max_prefill_tokens = 7;  // prompts of up to 30 tokens are chunked, differently alone and batched
    o.weight_format = wf;
    const auto js = jobs();
    std::vector<GenerateResult> alone;
    {
      Engine e(m, 0, nullptr, o);
      for (const auto& j : js) alone.push_back(e.generate(j.prompt, j.p));
    }
    Engine e(m, 0, nullptr, o);
    std::vector<RequestHandle> hs;
    for (const auto& j : js) hs.push_back(e.submit(j.prompt, j.p));
    for (size_t i = 0; i < js.size(); ++i) {
      const GenerateResult b = hs[i].wait();
      ASSERT_EQ(b.completions.size(), alone[i].completions.size());
      for (size_t k = 0; k < b.completions.size(); ++k) {
        const auto& x = alone[i].completions[k];
        const auto& y = b.completions[k];
        EXPECT_EQ(x.token_ids, y.token_ids) << "request " << i << " sample " << k;
        EXPECT_TRUE(same_bits(x.logprobs, y.logprobs))
            << "request " << i << " sample " << k << " (format " << static_cast<int>(wf)
            << "): logprobs differ alone vs batched, first " << (x.logprobs.empty() ? 0.f : x.logprobs[0]) << " vs "
            << (y.logprobs.empty() ? 0.f : y.logprobs[0]);
      }
    }
    EXPECT_GT(e.stats().steps, 0);
  }
}
