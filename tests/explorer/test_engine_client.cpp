// EngineClient over a real engine on a tiny random model: samples carry exact prompt ids and
// sampled ids; logprobs() of prompt + response reproduces the sampled tokens' logprobs (the
// trainer's quantity) within 1e-4; chat applies the template; cancel ends in-flight requests and
// later calls throw CancelledError; set_weights swaps versions.
#include <gtest/gtest.h>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "common/tiny_config.h"
#include "explorer/engine_client.h"
#include "model/transformer.h"
#include "workflow/fake_client.h"
#include "workflow/simple_workflow.h"

namespace trinity::explorer {
namespace {

std::shared_ptr<const RolloutModel> tiny_rollout_model(uint64_t seed, bool record_history = false,
                                                       int64_t max_prompt_tokens = 0) {
  auto cfg = test::tiny_config({.vocab = 259, .eos = {256, 258}});
  auto m = std::make_shared<model::Transformer>(cfg);
  m->init_random(seed, 0.5f);
  auto rm = std::make_shared<RolloutModel>();
  tok::TokenizerConfig tc = tok::TokenizerConfig::parse(
      R"({"eos_token": "<|endoftext|>", "chat_template": "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}"})");
  rm->chat = std::make_shared<const tok::ChatFormatter>(testing::byte_tokenizer(), tc);
  rm->defaults.max_tokens = 12;
  rm->record_history = record_history;
  rm->defaults.prompt_truncation = max_prompt_tokens > 0;
  rm->defaults.max_prompt_tokens = max_prompt_tokens;
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

// model.enable_prompt_truncation: a prompt longer than max_prompt_tokens is not generated from; its
// n samples are Trinity's dummies (first max_prompt_tokens ids + the next one, logprob 0), which
// experience_from_sample masks out. A prompt that fits is generated from as usual.
TEST(EngineClient, OverlongPromptGivesMaskedDummies) {
  auto rm = tiny_rollout_model(5, false, 8);
  EngineClient c(rm, nullptr, 1);
  workflow::GenOptions o;
  o.n = 3;
  const std::string msgs = R"([{"role": "user", "content": "a prompt far longer than eight tokens"}])";
  const std::vector<int32_t> full = c.apply_chat_template(msgs, true);
  ASSERT_GT(full.size(), 9u);
  const auto s = c.chat(msgs, o);
  ASSERT_EQ(s.size(), 3u);
  for (const auto& x : s) {
    EXPECT_EQ(x.finish_reason, "prompt_truncated");
    EXPECT_EQ(x.prompt_ids, std::vector<int32_t>(full.begin(), full.begin() + 8));
    EXPECT_EQ(x.ids, std::vector<int32_t>{full[8]});
    EXPECT_EQ(x.logprobs, std::vector<float>{0.0f});
    EXPECT_EQ(x.text, "[This experience is masked out due to overlong prompt]");
  }
  const buffer::Experience e = workflow::experience_from_sample(s[0], c, 0);
  EXPECT_EQ(e.truncate_status, buffer::TruncateStatus::kPromptTruncated);
  EXPECT_EQ(e.prompt_length, 8);
  EXPECT_EQ(e.action_mask, std::vector<uint8_t>{0});
  EXPECT_EQ(c.generate(std::string(20, 'x'), o)[0].finish_reason, "prompt_truncated");
  const auto fits = c.generate("1+1=", o);
  ASSERT_EQ(fits.size(), 3u);
  EXPECT_NE(fits[0].finish_reason, "prompt_truncated");
  EXPECT_EQ(fits[0].prompt_ids, rm->chat->tokenizer().encode("1+1="));
}

// explorer.rollout_model.enable_history: the client records every sample with its exact ids.
TEST(EngineClient, HistoryRecordsCallsWhenEnabled) {
  auto rm = tiny_rollout_model(5, true);
  EngineClient c(rm, nullptr, 2);
  workflow::GenOptions o;
  o.n = 2;
  const auto s = c.chat(R"([{"role": "user", "content": "hi"}])", o);
  const auto h = c.history(/*clear=*/false);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].prompt_ids, s[0].prompt_ids);
  EXPECT_EQ(h[1].ids, s[1].ids);
  EXPECT_EQ(h[1].logprobs, s[1].logprobs);
  EXPECT_EQ(c.history().size(), 2u);  // take
  EXPECT_TRUE(c.history().empty());
  EngineClient off(tiny_rollout_model(5), nullptr, 2);
  off.chat(R"([{"role": "user", "content": "hi"}])", {});
  EXPECT_TRUE(off.history().empty());
}

// The per-run OpenAI endpoint: a run's key records into that run's history only, the run's sampling
// defaults apply (max_tokens 12), a closed endpoint's key and every key of a cancelled attempt are 401.
TEST(EngineClient, OpenAIEndpointsArePerRunAndRevoked) {
  auto rm = tiny_rollout_model(6);
  EngineClient c(rm, nullptr, 3);
  auto ep1 = c.open_openai_endpoint();
  auto ep2 = c.open_openai_endpoint();
  ASSERT_NE(ep1->api_key, ep2->api_key);
  EXPECT_EQ(ep1->base_url.rfind("http://127.0.0.1:", 0), 0u);
  const int port = std::stoi(ep1->base_url.substr(17));
  auto post = [&](const std::string& key) {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(60, 0);
    const nlohmann::json body = {{"model", "whatever"},
                                 {"messages", nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}})}};
    auto r = cli.Post("/v1/chat/completions", {{"Authorization", "Bearer " + key}}, body.dump(), "application/json");
    return r ? std::make_pair(r->status, r->body) : std::make_pair(-1, std::string());
  };
  auto [st1, body1] = post(ep1->api_key);
  ASSERT_EQ(st1, 200) << body1;
  EXPECT_LE(nlohmann::json::parse(body1)["usage"]["completion_tokens"].get<int>(), 12);
  EXPECT_EQ(ep1->history->size(), 1u);
  EXPECT_EQ(ep2->history->size(), 0u);
  EXPECT_EQ(post(ep2->api_key).first, 200);
  EXPECT_EQ(ep2->history->size(), 1u);
  EXPECT_EQ(post("trinity-run-guess").first, 401);
  const std::string k1 = ep1->api_key;
  ep1.reset();
  EXPECT_EQ(post(k1).first, 401);
  c.cancel();
  EXPECT_EQ(post(ep2->api_key).first, 401);
  EXPECT_THROW(c.open_openai_endpoint(), workflow::CancelledError);
}

// An agent's calls without a seed sample from the run's seed (explorer.rollout_model.seed): a run
// repeated with the same seed gets the same completions call by call; calls within a run differ.
TEST(EngineClient, OpenAIEndpointCallsAreSeededPerRun) {
  auto rm = tiny_rollout_model(7);
  auto run_calls = [&](uint64_t seed) {
    EngineClient c(rm, nullptr, seed);
    auto ep = c.open_openai_endpoint();
    const int port = std::stoi(ep->base_url.substr(17));
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < 3; ++i) {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(60, 0);
      const nlohmann::json body = {{"model", "m"},
                                   {"temperature", 1.0},
                                   {"max_tokens", 12},
                                   {"messages", nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}})}};
      auto r = cli.Post("/v1/chat/completions", {{"Authorization", "Bearer " + ep->api_key}}, body.dump(),
                        "application/json");
      EXPECT_TRUE(r && r->status == 200);
    }
    for (const auto& call : ep->history->calls()) out.push_back(call.ids);
    return out;
  };
  const auto a = run_calls(11), b = run_calls(11), c = run_calls(12);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_FALSE(a[0] == a[1] && a[1] == a[2]) << "each call of a run has its own seed";
}

}  // namespace
}  // namespace trinity::explorer
