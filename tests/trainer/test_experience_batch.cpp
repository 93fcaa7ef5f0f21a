// Experience -> packed model batch / padded [B, T] arrays: targets only at response positions, model
// logprob rows aligned with response tokens, scatter/gather round trip, DPO row expansion, micro-batch
// ranges, shared prompts, and explorer-side GRPO advantages on experiences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "pipeline/advantages.h"
#include "pipeline/experience_batch.h"
#include "trainer/packed_batch.h"
#include "trainer_test_util.h"

using namespace trinity;
using namespace trinity::trainer;
using namespace trinity::pipeline;

namespace {

TEST(ExperienceBatch, TargetsOnlyAtResponsePositionsAndRowsAlign) {
  Rng rng(1);
  std::vector<buffer::Experience> exps = {test::make_exp(rng, 3, 4, 37, 0, 0, 1.0),
                                          test::make_exp(rng, 1, 2, 37, 0, 1, 0.0),
                                          test::make_exp(rng, 5, 6, 37, 1, 0, 0.5)};
  exps[1].action_mask = {0, 1};
  exps[2].logprobs = {-1, -2, -3, -4, -5, -6};
  const ExperienceBatch eb = make_batch(exps);
  ASSERT_EQ(eb.B, 3);
  ASSERT_EQ(eb.T, 6);
  const model::Batch pb = trainer::packed_batch(eb, 0, eb.B, false);
  ASSERT_EQ(pb.rows(), 7 + 3 + 11);
  // The k-th row with a target predicts the k-th response token, in order.
  std::vector<int32_t> want;
  for (const auto& e : exps) want.insert(want.end(), e.tokens.begin() + e.prompt_length, e.tokens.end());
  std::vector<int32_t> got;
  for (int64_t i = 0; i < pb.rows(); ++i)
    if (pb.targets[static_cast<size_t>(i)] >= 0) got.push_back(pb.targets[static_cast<size_t>(i)]);
  EXPECT_EQ(got, want);
  // Row P-1 of each sequence predicts its first response token; earlier rows have no target.
  EXPECT_EQ(pb.targets[0], -1);
  EXPECT_EQ(pb.targets[1], -1);
  EXPECT_EQ(pb.targets[2], exps[0].tokens[3]);
  EXPECT_EQ(pb.targets[6], -1);  // last token of sequence 0
  EXPECT_EQ(pb.targets[7], exps[1].tokens[1]);
  EXPECT_EQ(pb.positions[7], 0);
  // The model gives exactly one logprob per response token.
  model::Transformer m = test::tiny_model();
  std::vector<float> lp, ent;
  m.forward(pb, lp, ent);
  EXPECT_EQ(lp.size(), want.size());
  // Padded arrays.
  EXPECT_EQ(eb.mask[eb.at(1, 0)], 0.0f);
  EXPECT_EQ(eb.mask[eb.at(1, 1)], 1.0f);
  EXPECT_EQ(eb.mask[eb.at(1, 2)], 0.0f);  // padding
  EXPECT_EQ(eb.old_logprob[eb.at(2, 5)], -6.0f);
  EXPECT_EQ(eb.rewards, (std::vector<float>{1.0f, 0.0f, 0.5f}));
  EXPECT_EQ(eb.group[0], eb.group[1]);
  EXPECT_NE(eb.group[0], eb.group[2]);
  EXPECT_NE(eb.run[0], eb.run[1]);
  // scatter/gather round trip, whole batch and a sub-range.
  const auto pad = eb.scatter(lp, 0, eb.B);
  EXPECT_EQ(eb.gather(pad.data(), 0, eb.B), lp);
  EXPECT_EQ(pad[eb.at(0, 4)], 0.0f);
  std::vector<float> tail(lp.begin() + 4, lp.end());
  const auto pad2 = eb.scatter(tail, 1, 3);
  EXPECT_EQ(pad2.size(), static_cast<size_t>(2 * eb.T));
  EXPECT_EQ(eb.gather(pad2.data(), 1, 3), tail);
  // Sub-range packing equals the corresponding slice of model outputs.
  std::vector<float> lp2, ent2;
  m.forward(trainer::packed_batch(eb, 1, 3, false), lp2, ent2);
  ASSERT_EQ(lp2.size(), tail.size());
  for (size_t i = 0; i < tail.size(); ++i) EXPECT_NEAR(lp2[i], tail[i], 1e-5);
}

// Rows with equal prompts, interleaved: task 0 three times (P 6), task 1 twice (P 4), task 2 once,
// and a one-token prompt twice (no prefix to share: its last token stays with each row).
std::vector<buffer::Experience> shared_prompt_rows() {
  Rng rng(7);
  std::vector<std::vector<buffer::Experience>> groups;
  auto group = [&](int64_t task, int64_t P, const std::vector<int64_t>& resp) {
    const auto first = test::make_exp(rng, P, 1, 37, task, 0, 0.0);
    std::vector<buffer::Experience> g;
    for (size_t r = 0; r < resp.size(); ++r) {
      auto e = test::make_exp(rng, P, resp[r], 37, task, static_cast<int64_t>(r), r % 2 ? 1.0 : 0.0);
      std::copy_n(first.tokens.begin(), P, e.tokens.begin());
      g.push_back(e);
    }
    groups.push_back(g);
  };
  group(0, 6, {3, 1, 4});
  group(1, 4, {2, 5});
  group(2, 5, {3});
  group(3, 1, {2, 2});
  return {groups[0][0], groups[1][0], groups[0][1], groups[2][0],
          groups[1][1], groups[3][0], groups[0][2], groups[3][1]};
}

TEST(ExperienceBatch, EqualPromptsShareOnePrefixSequence) {
  const ExperienceBatch eb = make_batch(shared_prompt_rows());
  const model::Batch whole = trainer::packed_batch(eb, 0, eb.B, false), pb = trainer::packed_batch(eb, 0, eb.B, true);
  EXPECT_TRUE(whole.prefix.empty());
  // Two prefix sequences (tasks 0 and 1: their prompts but the last token), each placed before its
  // first continuation; the others continue them at the prompt's positions.
  ASSERT_EQ(pb.num_seqs(), eb.B + 2);
  EXPECT_EQ(pb.prefix, (std::vector<int64_t>{-1, 0, -1, 2, 0, -1, 2, -1, 0, -1}));
  EXPECT_EQ(pb.rows(), whole.rows() - 2 * 5 - 1 * 3);
  EXPECT_EQ(pb.seq_start[1], 5);
  EXPECT_EQ(pb.positions[5], 5);  // the first continuation starts at the last prompt token
  for (int64_t r = 0; r < 5; ++r) EXPECT_EQ(pb.targets[static_cast<size_t>(r)], -1);
  // The same targets, in the same order: the outputs still line up with the rows' response tokens.
  auto targets = [](const model::Batch& b) {
    std::vector<int32_t> t;
    for (int32_t x : b.targets)
      if (x >= 0) t.push_back(x);
    return t;
  };
  EXPECT_EQ(targets(pb), targets(whole));
  EXPECT_TRUE(trainer::packed_batch(eb, 0, 2, true).prefix.empty());  // no two rows alike in [0, 2)
}

TEST(ExperienceBatch, SharedPromptsGiveTheSameLogprobsAndGradients) {
  // Full model and a LoRA model with activation checkpointing: same outputs and same gradients
  // whether each row computes its prompt or the rows share it.
  const ExperienceBatch eb = make_batch(shared_prompt_rows());
  const model::Batch whole = trainer::packed_batch(eb, 0, eb.B, false), pb = trainer::packed_batch(eb, 0, eb.B, true);
  for (bool lora : {false, true}) {
    model::Transformer m = test::tiny_model();
    if (lora) {
      model::LoraConfig lc;
      lc.rank = 2;
      m.add_lora(lc, 3);
      Rng r(5);
      for (int64_t i = 0; i < m.num_trainable(); ++i) m.trainable_params()[i] += 0.1f * static_cast<float>(r.normal());
      m.set_gradient_checkpointing(true);
    }
    auto run = [&](const model::Batch& b, std::vector<float>& lp, std::vector<float>& ent) {
      m.zero_grad();
      m.forward(b, lp, ent);
      std::vector<float> dlp(lp.size()), dent(lp.size());
      for (size_t i = 0; i < lp.size(); ++i)
        dlp[i] = 0.3f - 0.1f * static_cast<float>(i % 7), dent[i] = 0.01f * (i % 3);
      m.backward(dlp, dent);
      return std::vector<float>(m.trainable_grads(), m.trainable_grads() + m.num_trainable());
    };
    std::vector<float> lp1, ent1, lp2, ent2;
    const auto g1 = run(whole, lp1, ent1), g2 = run(pb, lp2, ent2);
    ASSERT_EQ(lp1.size(), lp2.size());
    for (size_t i = 0; i < lp1.size(); ++i) {
      EXPECT_NEAR(lp1[i], lp2[i], 1e-5) << "logprob " << i << (lora ? " (LoRA)" : "");
      EXPECT_NEAR(ent1[i], ent2[i], 1e-5) << "entropy " << i << (lora ? " (LoRA)" : "");
    }
    double scale = 0;
    for (float g : g1) scale = std::max(scale, std::abs(static_cast<double>(g)));
    ASSERT_GT(scale, 0.0);
    for (size_t i = 0; i < g1.size(); ++i)
      ASSERT_NEAR(g1[i], g2[i], 1e-4 * scale) << "gradient " << i << (lora ? " (LoRA)" : "");
  }
}

// A DPO experience: prompt {1, 2, 3}, chosen {4, 5}, rejected {6}.
buffer::Experience dpo_exp() {
  buffer::Experience e;
  e.tokens = {1, 2, 3};
  e.prompt_length = 3;
  e.chosen = {4, 5};
  e.rejected = {6};
  return e;
}

TEST(ExperienceBatch, DpoExpandsToChosenRejectedRows) {
  const ExperienceBatch eb = make_batch({dpo_exp(), dpo_exp()});
  ASSERT_TRUE(eb.dpo);
  ASSERT_EQ(eb.B, 4);
  EXPECT_EQ(eb.seqs[0], (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(eb.seqs[1], (std::vector<int32_t>{1, 2, 3, 6}));
  EXPECT_EQ(eb.T, 2);
  EXPECT_EQ(eb.mask, (std::vector<float>{1, 1, 1, 0, 1, 1, 1, 0}));
  // Pairs stay in one micro-batch.
  for (auto [b0, b1] : micro_ranges(eb, 9, 0, true)) EXPECT_EQ((b1 - b0) % 2, 0);
  EXPECT_THROW(micro_ranges(eb, 8, 0, true), ValueError);  // a pair holds 9 tokens
  buffer::Experience plain;
  plain.tokens = {1, 2};
  plain.prompt_length = 1;
  EXPECT_THROW(make_batch({dpo_exp(), plain}), ValueError);
}

TEST(ExperienceBatch, ExpertRowsWithoutRolloutArraysReadAsZeros) {
  Rng rng(6);
  auto usual = test::make_exp(rng, 2, 3, 37, 0, 0, 1);
  usual.advantages = {0.5f, 0.5f, 0.5f};
  auto expert = test::make_exp(rng, 2, 2, 37, 1, 0, 0);
  expert.logprobs.clear();
  expert.info = R"({"is_expert": true})";
  const ExperienceBatch eb = make_batch({usual, expert});
  EXPECT_TRUE(eb.has_old_logprob);
  ASSERT_EQ(eb.advantages.size(), static_cast<size_t>(2 * eb.T));
  EXPECT_EQ(eb.advantages[eb.at(0, 2)], 0.5f);
  EXPECT_EQ(eb.advantages[eb.at(1, 0)], 0.0f);
  EXPECT_EQ(eb.is_expert, (std::vector<uint8_t>{0, 1}));
  // Without the expert flag a missing array means the batch has none.
  expert.info.clear();
  EXPECT_TRUE(make_batch({usual, expert}).advantages.empty());
}

TEST(ExperienceBatch, RejectsBadShapes) {
  Rng rng(2);
  auto e = test::make_exp(rng, 2, 3, 37, 0, 0, 1);
  e.logprobs.pop_back();
  EXPECT_THROW(make_batch({e}), ValueError);
  auto z = test::make_exp(rng, 0, 3, 37, 0, 0, 1);
  EXPECT_THROW(make_batch({z}), ValueError);
}

TEST(ExperienceBatch, MicroRangesByTokensAndRows) {
  Rng rng(3);
  std::vector<buffer::Experience> exps;
  for (int i = 0; i < 5; ++i) exps.push_back(test::make_exp(rng, 2, 3, 37, i, 0, 0));  // 5 tokens each
  const ExperienceBatch eb = make_batch(exps);
  using R = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(micro_ranges(eb, 10, 0), (R{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_EQ(micro_ranges(eb, 5, 0), (R{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}));  // exactly one row each
  // A sequence longer than the budget is an error naming it (upstream: each sequence must fit).
  try {
    micro_ranges(eb, 4, 0);
    ADD_FAILURE() << "expected a ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("has 5 tokens"), std::string::npos) << msg;
    EXPECT_NE(msg.find("trainer.max_token_len_per_gpu (4)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(eb.group[0] + "/" + eb.run[0]), std::string::npos) << msg;
  }
  EXPECT_EQ(micro_ranges(eb, 0, 2), (R{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_EQ(micro_ranges(eb, 0, 0), (R{{0, 5}}));
}

TEST(ExperienceBatch, MicroRangesCountASharedPromptOnce) {
  // 55 tokens in all; sharing saves 5 + 3 + 5 (tasks 0 and 1's later rows): 42 rows to compute.
  const ExperienceBatch eb = make_batch(shared_prompt_rows());
  using R = std::vector<std::pair<int64_t, int64_t>>;
  ASSERT_EQ(eb.tokens(0, eb.B), 55);
  EXPECT_EQ(micro_ranges(eb, 42, 0, false, 0, -1, true), (R{{0, 8}}));
  EXPECT_GT(micro_ranges(eb, 42, 0).size(), 1u);
  // Whatever the budget, a range's packed batch never holds more rows than it.
  for (int64_t budget = 10; budget <= 55; ++budget)
    for (auto [b0, b1] : micro_ranges(eb, budget, 0, false, 0, -1, true))
      EXPECT_LE(trainer::packed_batch(eb, b0, b1, true).rows(), budget) << "budget " << budget;
  // A DPO pair (prompt 3 + chosen 2, prompt 3 + rejected 1: 9 tokens) shares 2 prompt tokens: 7.
  const ExperienceBatch dpo = make_batch({dpo_exp(), dpo_exp()});
  EXPECT_THROW(micro_ranges(dpo, 6, 0, true, 0, -1, true), ValueError);
  EXPECT_EQ(micro_ranges(dpo, 11, 0, true, 0, -1, true), (R{{0, 2}, {2, 4}}));
  EXPECT_EQ(micro_ranges(dpo, 12, 0, true, 0, -1, true), (R{{0, 4}}));  // 7 + 5: the second pair's prompt is held
  EXPECT_EQ(trainer::packed_batch(dpo, 0, 4, true).rows(), 12);
}

TEST(ExperienceBatch, ExplorerGrpoAdvantages) {
  algo::AlgorithmSpec spec;
  spec.algorithm_type = "grpo";
  algo::Algorithm alg(spec);
  Rng rng(4);
  std::vector<buffer::Experience> exps = {test::make_exp(rng, 2, 3, 37, 0, 0, 1.0), test::make_exp(rng, 2, 2, 37, 0, 1, 0.0),
                                          test::make_exp(rng, 2, 4, 37, 1, 0, 0.5), test::make_exp(rng, 2, 1, 37, 1, 1, 0.5)};
  Rng arng(5);
  const auto metrics = compute_advantages(alg, exps, arng);
  ASSERT_EQ(exps.size(), 4u);
  ASSERT_EQ(exps[0].advantages.size(), 3u);
  ASSERT_EQ(exps[1].advantages.size(), 2u);
  // (r - mean) / (std + eps) with the unbiased std of {1, 0}: ±1/sqrt(0.5) = ±0.7071.
  EXPECT_NEAR(exps[0].advantages[0], 0.70710677, 1e-4);
  EXPECT_NEAR(exps[1].advantages[1], -0.70710677, 1e-4);
  EXPECT_NEAR(exps[2].advantages[3], 0.0, 1e-6);
  EXPECT_TRUE(metrics.count("critic/score/mean"));
  bool pipeline = false;
  for (const auto& [k, v] : metrics) pipeline |= k.rfind("experience_pipeline/", 0) == 0;
  EXPECT_TRUE(pipeline);
}

// GiGPO reads its anchor states from info.anchor (env_workflow's step-wise layout); without them it
// names the missing field.
TEST(ExperienceBatch, GigpoAnchorsComeFromInfo) {
  algo::AlgorithmSpec spec;
  spec.algorithm_type = "gigpo";
  algo::Algorithm alg(spec);
  Rng rng(6);
  std::vector<buffer::Experience> exps;
  for (int64_t run = 0; run < 2; ++run)
    for (int64_t step = 0; step < 2; ++step) {
      auto e = test::make_exp(rng, 2, 3, 37, 0, run, step == 1 && run == 0 ? 1.0 : 0.0);
      e.eid.step = step;
      e.info = step == 0 ? R"({"anchor": "at 1 goal 3"})" : R"({"anchor": "at 2 goal 3"})";
      exps.push_back(e);
    }
  const ExperienceBatch eb = make_batch(exps);
  ASSERT_EQ(eb.anchor.size(), 4u);
  EXPECT_EQ(eb.anchor[0], "at 1 goal 3");
  auto with = exps;
  Rng arng(7);
  compute_advantages(alg, with, arng);
  ASSERT_EQ(with.size(), 4u);
  // Run 0 earned the reward: its steps get a positive advantage, run 1's a negative one.
  EXPECT_GT(with[0].advantages[0], 0.0f);
  EXPECT_LT(with[2].advantages[0], 0.0f);
  for (auto& e : exps) e.info = "";
  try {
    compute_advantages(alg, exps, arng);
    FAIL() << "gigpo without anchors";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("anchor"), std::string::npos) << e.what();
  }
}

}  // namespace
