// experiences_from_history: token-consistent calls merge into one experience (sampled tokens trained,
// inserted tokens masked), rewritten history splits into step-indexed experiences counted as
// inconsistent, n > 1 siblings are not inconsistent, and logprobs line up with their tokens.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "workflow/history.h"

using namespace trinity;
using tok::RecordedCall;

namespace {

RecordedCall call(const std::string& id, std::vector<int32_t> prompt, std::vector<int32_t> ids, double start,
                  int64_t version = 3, const std::string& finish = "stop") {
  RecordedCall c;
  c.id = id;
  c.prompt_ids = std::move(prompt);
  c.ids = std::move(ids);
  for (size_t i = 0; i < c.ids.size(); ++i) c.logprobs.push_back(-static_cast<float>(c.ids[i]) / 100.0f);
  c.start = start;
  c.model_version = version;
  c.finish_reason = finish;
  return c;
}

}  // namespace

TEST(History, ConsistentTurnsMergeIntoOneExperience) {
  // turn 1: prompt [1 2 3] -> [10 11]; the tool inserts [20 21]; turn 2 -> [12]; the user inserts [22]; turn 3 -> [13
  // 14].
  const std::vector<RecordedCall> calls = {
      call("a", {1, 2, 3}, {10, 11}, 1.0),
      call("b", {1, 2, 3, 10, 11, 20, 21}, {12}, 2.0, 4),
      call("c", {1, 2, 3, 10, 11, 20, 21, 12, 22}, {13, 14}, 3.0, 4, "length"),
  };
  const auto h = workflow::experiences_from_history(calls);
  EXPECT_EQ(h.calls, 3);
  EXPECT_EQ(h.inconsistent, 0);
  ASSERT_EQ(h.experiences.size(), 1u);
  const auto& e = h.experiences[0];
  EXPECT_EQ(e.tokens, (std::vector<int32_t>{1, 2, 3, 10, 11, 20, 21, 12, 22, 13, 14}));
  EXPECT_EQ(e.prompt_length, 3);
  EXPECT_EQ(e.action_mask, (std::vector<uint8_t>{1, 1, 0, 0, 1, 0, 1, 1}));
  const std::vector<float> lp = {-0.10f, -0.11f, 0, 0, -0.12f, 0, -0.13f, -0.14f};
  EXPECT_EQ(e.logprobs, lp);
  EXPECT_EQ(e.model_version, 3);  // the oldest weights in the trajectory
  EXPECT_EQ(e.truncate_status, buffer::TruncateStatus::kResponseTruncated);
  EXPECT_EQ(e.eid.step, 0);
  EXPECT_FALSE(e.reward.has_value());
  const auto info = nlohmann::json::parse(e.info);
  EXPECT_EQ(info["calls"], 3);
  EXPECT_EQ(info["call_ids"], nlohmann::json({"a", "b", "c"}));
}

TEST(History, RewrittenHistorySplitsIntoSteps) {
  // Turn 2 summarised the conversation: its prompt does not extend turn 1; turn 3 extends turn 2.
  const std::vector<RecordedCall> calls = {
      call("a", {1, 2, 3}, {10, 11}, 1.0),
      call("b", {1, 2, 9, 10}, {12}, 2.0),
      call("c", {1, 2, 9, 10, 12, 30}, {13}, 3.0),
  };
  const auto h = workflow::experiences_from_history(calls);
  EXPECT_EQ(h.inconsistent, 1);
  ASSERT_EQ(h.notes.size(), 1u);
  EXPECT_NE(h.notes[0].find("call b"), std::string::npos) << h.notes[0];
  EXPECT_NE(h.notes[0].find("at id 2"), std::string::npos) << h.notes[0];
  ASSERT_EQ(h.experiences.size(), 2u);
  EXPECT_EQ(h.experiences[0].eid.step, 0);
  EXPECT_EQ(h.experiences[0].tokens, (std::vector<int32_t>{1, 2, 3, 10, 11}));
  EXPECT_EQ(h.experiences[1].eid.step, 1);
  EXPECT_EQ(h.experiences[1].tokens, (std::vector<int32_t>{1, 2, 9, 10, 12, 30, 13}));
  EXPECT_EQ(h.experiences[1].prompt_length, 4);
  EXPECT_EQ(h.experiences[1].action_mask, (std::vector<uint8_t>{1, 0, 1}));
}

TEST(History, TruncatedHistoryIsInconsistentAndOrderIsByStart) {
  // Recorded out of order (concurrent completion): sorted by start time before chaining.
  const std::vector<RecordedCall> calls = {
      call("b", {1, 2}, {7}, 2.0),  // drops the earlier answer: shorter than turn 1's prompt + response
      call("a", {1, 2, 3}, {10}, 1.0),
  };
  const auto h = workflow::experiences_from_history(calls);
  EXPECT_EQ(h.inconsistent, 1);
  ASSERT_EQ(h.experiences.size(), 2u);
  EXPECT_EQ(h.experiences[0].tokens, (std::vector<int32_t>{1, 2, 3, 10}));
  EXPECT_NE(h.notes[0].find("shorter"), std::string::npos) << h.notes[0];
}

TEST(History, SiblingSamplesAreNotInconsistentAndEmptyCallsAreSkipped) {
  const std::vector<RecordedCall> calls = {
      call("a", {1, 2}, {10}, 1.0),
      call("a", {1, 2}, {11}, 1.0),
      call("x", {5}, {}, 1.5),  // aborted before a token
      call("b", {1, 2, 11, 40}, {12}, 2.0),
  };
  const auto h = workflow::experiences_from_history(calls);
  EXPECT_EQ(h.calls, 3);
  EXPECT_EQ(h.inconsistent, 0);
  ASSERT_EQ(h.experiences.size(), 2u);
  EXPECT_EQ(h.experiences[1].tokens, (std::vector<int32_t>{1, 2, 11, 40, 12}));  // continued the second sample
}
