// SFT / DPO rows -> experiences: plaintext concatenation with EOS, chat-template messages with the
// assistant mask (multi-turn user turns masked out), truncation to max_model_len, DPO pairs; and SFT
// training on a tiny model driving the loss down.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "trainer/sft_data.h"
#include "trainer/trainer.h"
#include "trainer_test_util.h"

using namespace trinity;
using namespace trinity::trainer;
using json = nlohmann::json;

namespace {

std::vector<buffer::RawRow> rows_of(const std::vector<json>& rows) {
  std::vector<buffer::RawRow> out;
  for (size_t i = 0; i < rows.size(); ++i) out.push_back({rows[i].dump(), "data.jsonl:" + std::to_string(i + 1)});
  return out;
}

std::string masked_text(const tok::Tokenizer& t, const buffer::Experience& e) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < e.action_mask.size(); ++i)
    if (e.action_mask[i]) ids.push_back(e.tokens[static_cast<size_t>(e.prompt_length) + i]);
  return t.decode(ids);
}

TEST(SftData, PlaintextWithoutTemplateAppendsEos) {
  const auto tok = test::byte_tokenizer();
  SftDataOptions o;
  o.format.prompt_type = "plaintext";
  o.eos_id = 257;
  SftDataReport rep;
  const auto exps = sft_experiences(rows_of({{{"prompt", "ab"}, {"response", "cde"}}}), o, tok, nullptr, rep);
  ASSERT_EQ(exps.size(), 1u);
  EXPECT_EQ(exps[0].tokens, (std::vector<int32_t>{'a', 'b', 'c', 'd', 'e', 257}));
  EXPECT_EQ(exps[0].prompt_length, 2);
  EXPECT_EQ(exps[0].action_mask, (std::vector<uint8_t>{1, 1, 1, 1}));
  // Truncation cuts the response and counts it; a prompt that fills max_model_len is skipped.
  o.max_model_len = 4;
  SftDataReport rep2;
  const auto cut = sft_experiences(rows_of({{{"prompt", "ab"}, {"response", "cde"}}, {{"prompt", "abcd"}, {"response", "x"}}}),
                                   o, tok, nullptr, rep2);
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].tokens, (std::vector<int32_t>{'a', 'b', 'c', 'd'}));
  EXPECT_EQ(cut[0].truncate_status, buffer::TruncateStatus::kResponseTruncated);
  EXPECT_EQ(rep2.truncated, 1);
  EXPECT_EQ(rep2.skipped, 1);
  ASSERT_EQ(rep2.problems.size(), 1u);
  EXPECT_NE(rep2.problems[0].find("data.jsonl:2"), std::string::npos);
}

TEST(SftData, MessagesMaskOnlyAssistantTokens) {
  const auto chat = test::byte_chat();
  SftDataOptions o;
  o.format.prompt_type = "messages";
  o.format.messages_key = "messages";
  o.format.system_prompt = "be brief";
  SftDataReport rep;
  const json msgs = json::array({{{"role", "user"}, {"content", "hi"}}, {{"role", "assistant"}, {"content", "yo"}},
                                 {{"role", "user"}, {"content", "more"}}, {{"role", "assistant"}, {"content", "ok"}}});
  const auto exps = sft_experiences(rows_of({{{"messages", msgs}}}), o, chat.tokenizer(), &chat, rep);
  ASSERT_EQ(exps.size(), 1u);
  const auto& e = exps[0];
  // Prompt = system + first user turn + the assistant header.
  EXPECT_EQ(chat.tokenizer().decode(std::vector<int32_t>(e.tokens.begin(), e.tokens.begin() + e.prompt_length)),
            "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(masked_text(chat.tokenizer(), e), "yo<|im_end|>ok<|im_end|>");
  EXPECT_EQ(e.action_mask.size(), static_cast<size_t>(e.response_length()));
  EXPECT_EQ(e.action_mask.front(), 1);
  // A conversation without an assistant turn is skipped with a reason.
  SftDataReport rep2;
  const auto none = sft_experiences(rows_of({{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}}), o,
                                    chat.tokenizer(), &chat, rep2);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(rep2.skipped, 1);
  o.strict = true;
  EXPECT_THROW(sft_experiences(rows_of({{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}}), o,
                               chat.tokenizer(), &chat, rep2),
               ValueError);
}

TEST(SftData, PlaintextThroughTemplate) {
  const auto chat = test::byte_chat();
  SftDataOptions o;
  o.format.prompt_type = "plaintext";
  SftDataReport rep;
  const auto exps = sft_experiences(rows_of({{{"prompt", "q"}, {"response", "a"}}}), o, chat.tokenizer(), &chat, rep);
  ASSERT_EQ(exps.size(), 1u);
  EXPECT_EQ(masked_text(chat.tokenizer(), exps[0]), "a<|im_end|>");
}

TEST(SftData, DpoPairs) {
  const auto chat = test::byte_chat();
  SftDataOptions o;
  o.format.prompt_type = "plaintext";
  SftDataReport rep;
  const auto exps = dpo_experiences(rows_of({{{"prompt", "q"}, {"chosen", "good"}, {"rejected", "bad"}}}), o,
                                    chat.tokenizer(), &chat, rep);
  ASSERT_EQ(exps.size(), 1u);
  const auto& e = exps[0];
  EXPECT_EQ(e.type(), buffer::ExperienceType::kDpo);
  EXPECT_EQ(e.prompt_length, static_cast<int64_t>(e.tokens.size()));
  EXPECT_EQ(chat.tokenizer().decode(e.tokens), "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat.tokenizer().decode(e.chosen), "good<|im_end|>\n");
  EXPECT_EQ(chat.tokenizer().decode(e.rejected), "bad<|im_end|>\n");
  // Whole conversations (messages format): shared prompt = all but the last turn.
  o.format.prompt_type = "messages";
  const json u = {{"role", "user"}, {"content", "q"}};
  const auto m = dpo_experiences(
      rows_of({{{"chosen", json::array({u, {{"role", "assistant"}, {"content", "good"}}})},
                {"rejected", json::array({u, {{"role", "assistant"}, {"content", "bad"}}})}}}),
      o, chat.tokenizer(), &chat, rep);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].tokens, e.tokens);
  EXPECT_EQ(m[0].chosen, e.chosen);
}

TEST(SftTraining, PlaintextSftLossGoesDown) {
  const auto tok = test::byte_tokenizer();
  SftDataOptions o;
  o.format.prompt_type = "plaintext";
  o.eos_id = 257;
  SftDataReport rep;
  const auto exps = sft_experiences(
      rows_of({{{"prompt", "2+2="}, {"response", "4"}}, {{"prompt", "3+3="}, {"response", "6"}},
               {{"prompt", "say hi:"}, {"response", "hi there"}}}),
      o, tok, nullptr, rep);
  ASSERT_EQ(exps.size(), 3u);
  algo::AlgorithmSpec spec;
  spec.algorithm_type = "sft";
  TrainerOptions to;
  to.optim.lr = 3e-3;
  to.optim.weight_decay = 0;
  PolicyTrainer tr(test::tiny_model(258), spec, to);
  double first = 0, last = 0;
  for (int step = 1; step <= 25; ++step) {
    const auto m = tr.train_step(exps, step);
    (step == 1 ? first : last) = m.at("actor/sft_loss");
  }
  EXPECT_GT(first, 4.0);  // ~log(258) at init
  EXPECT_LT(last, 0.5 * first);
}

}  // namespace
