// EngineClient over a real engine on a tiny random model: samples carry exact prompt ids and
// sampled ids; logprobs() of prompt + response reproduces the sampled tokens' logprobs (the
// trainer's quantity) within 1e-4; chat applies the template; cancel ends in-flight requests and
// later calls throw CancelledError; set_weights swaps versions.
#include <gtest/gtest.h>

#include "common/tiny_config.h"
#include "explorer/engine_client.h"
#include "model/transformer.h"
#include "workflow/fake_client.h"

namespace trinity::explorer {
namespace {

std::shared_ptr<const RolloutModel> tiny_rollout_model(uint64_t seed) {
  auto cfg = test::tiny_config({.vocab = 259, .eos = {256, 258}});
  auto m = std::make_shared<model::Transformer>(cfg);
  m->init_random(seed, 0.5f);
  auto rm = std::make_shared<RolloutModel>();
  tok::TokenizerConfig tc = tok::TokenizerConfig::parse(
      R"({"eos_token": "<|endoftext|>", "chat_template": "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}"})");
  rm->chat = std::make_shared<const tok::ChatFormatter>(testing::byte_tokenizer(), tc);
  rm->defaults.max_tokens = 12;
  std::shared_ptr<const model::Transformer> w = m;
  rm->init_weights(w);
  engine::EngineOptions eo;
  eo.kv_cache_bytes = int64_t{16} << 20;
  rm->engine = std::make_shared<engine::Engine>(w, 0, std::make_shared<const tok::Tokenizer>(rm->chat->tokenizer()), eo);
  return rm;
}

TEST(EngineClient, SampledLogprobsEqualRecomputedOnes) {
  auto rm = tiny_rollout_model(3);
  EngineClient c(rm, nullptr, 11);
  workflow::GenOptions o;
  o.n = 3;
  o.temperature = 0.7;
  o.max_tokens = 10;
  const auto samples = c.generate("12+34=", o);
  ASSERT_EQ(samples.size(), 3u);
  for (const auto& s : samples) {
    EXPECT_EQ(s.prompt_ids, rm->chat->tokenizer().encode("12+34="));
    ASSERT_FALSE(s.ids.empty());
    ASSERT_EQ(s.logprobs.size(), s.ids.size());
    std::vector<int32_t> all = s.prompt_ids;
    all.insert(all.end(), s.ids.begin(), s.ids.end());
    const auto lp = c.logprobs(all, 0.7);
    ASSERT_EQ(lp.size(), all.size() - 1);
    for (size_t i = 0; i < s.ids.size(); ++i)
      EXPECT_NEAR(lp[s.prompt_ids.size() - 1 + i], s.logprobs[i], 1e-4) << i;
  }
  EXPECT_THROW(c.logprobs({1, 2, 400}, 1.0), ValueError);
}

TEST(EngineClient, ChatUsesTheTemplateAndCancelStopsEverything) {
  auto rm = tiny_rollout_model(4);
  EngineClient c(rm, nullptr, 1);
  const std::string msgs = R"([{"role": "user", "content": "hi"}])";
  EXPECT_EQ(c.render_chat_template(msgs, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  const auto s = c.chat(msgs, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].prompt_ids, c.apply_chat_template(msgs, true));
  EXPECT_EQ(c.model_version(), 0);
  auto w2 = std::make_shared<const model::Transformer>(model::Transformer(rm->weights()->config()));
  rm->set_weights(w2, 5);
  EXPECT_EQ(c.model_version(), 5);
  EXPECT_EQ(c.chat(msgs, {})[0].model_version, 5);
  c.cancel();
  EXPECT_TRUE(c.cancelled());
  EXPECT_THROW(c.chat(msgs, {}), workflow::CancelledError);
  EXPECT_THROW(c.logprobs({1, 2}, 1.0), workflow::CancelledError);
}

}  // namespace
}  // namespace trinity::explorer
