// Experience / Task data model: eid ids, lossless JSON and blob round trips, schema version checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "buffer/experience.h"
#include "core/error.h"
#include "test_util.h"

using namespace trinity::buffer;
using trinity::buffer::testing::make_exp;

TEST(BufferEid, DerivedIds) {
  Eid id{"7", 3, 2, 1, "abc123"};
  EXPECT_EQ(id.uid(), "7/3/2/1/abc123");
  EXPECT_EQ(id.tid(), "7/3");
  EXPECT_EQ(id.rid(), "7/3/2");
  EXPECT_EQ(id.sid(), "7/3/1");
  const std::string s = random_suffix();
  EXPECT_EQ(s.size(), 6u);
  EXPECT_NE(s, random_suffix());
}

TEST(BufferExperience, JsonRoundTripIsLossless) {
  for (int64_t i = 0; i < 24; ++i) {
    Experience e = make_exp(i, 10 + i, i % 5 == 0, i);
    const std::string j = experience_to_json(e);
    EXPECT_NE(j.find("\"schema_version\":1"), std::string::npos);
    Experience back = experience_from_json(j);
    EXPECT_TRUE(back == e) << j;
    EXPECT_EQ(back.pending(), i % 5 == 0);
  }
}

TEST(BufferExperience, EmptyInfoEqualsEmptyObject) {
  Experience e = make_exp(3);
  e.info = "{}";
  Experience back = experience_from_json(experience_to_json(e));
  EXPECT_TRUE(back == e);
  EXPECT_EQ(back.info, "");
}

TEST(BufferExperience, NonFiniteFloatsSurvive) {
  Experience e = make_exp(1);
  e.logprobs[0] = -std::numeric_limits<float>::infinity();
  e.advantages[1] = std::numeric_limits<float>::quiet_NaN();
  e.reward = std::numeric_limits<double>::infinity();
  e.logprobs[2] = 1.17549435e-38f;  // smallest normal float
  e.logprobs[3] = 0.1f;             // not exact in decimal
  Experience back = experience_from_json(experience_to_json(e));
  EXPECT_TRUE(back == e);
  EXPECT_TRUE(std::isnan(back.advantages[1]));
}

TEST(BufferExperience, BlobPlusMetaRoundTrip) {
  Experience e = make_exp(5, 1024);
  Experience back = experience_from_json(experience_to_json(e, false));
  EXPECT_TRUE(back.tokens.empty());
  decode_arrays(encode_arrays(e), back);
  EXPECT_TRUE(back == e);
}

TEST(BufferExperience, TypeRules) {
  Experience e = make_exp(0);
  EXPECT_EQ(e.type(), ExperienceType::kMultiTurn);  // mask has zeros
  std::fill(e.action_mask.begin(), e.action_mask.end(), 1);
  EXPECT_EQ(e.type(), ExperienceType::kSingleTurn);
  EXPECT_EQ(make_exp(5).type(), ExperienceType::kDpo);
}

TEST(BufferExperience, MalformedInputNamesTheProblem) {
  try {
    experience_from_json("{\"tokens\": [1, \"x\"]}", "data.jsonl:3");
    FAIL();
  } catch (const trinity::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("data.jsonl:3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tokens"), std::string::npos) << e.what();
  }
  EXPECT_THROW(experience_from_json("{not json", "x"), trinity::ValueError);
  EXPECT_THROW(experience_from_json("{\"schema_version\": 99}", "x"), trinity::ValueError);
  EXPECT_THROW(experience_from_json("{\"tokens\":[1,2],\"prompt_length\":3}", "x"), trinity::ValueError);
  EXPECT_THROW(experience_from_json("{\"truncate_status\":\"cut\"}", "x"), trinity::ValueError);
  EXPECT_THROW(experience_from_json("{\"tokens\":[4294967296]}", "x"), trinity::ValueError);
  Experience e = make_exp(2);
  std::string blob = encode_arrays(e);
  EXPECT_THROW(decode_arrays(blob.substr(0, blob.size() - 3), e), trinity::ValueError);
  EXPECT_THROW(decode_arrays("XXXX", e), trinity::ValueError);
}

TEST(BufferTask, JsonRoundTrip) {
  Task t;
  t.raw = "{\"answer\":\"2\",\"n\":[1,2],\"question\":\"1+1\"}";  // canonical (sorted keys)
  t.task_desc = "1+1";
  t.truth = "2";
  t.system_prompt = "be brief";
  t.workflow = "math_workflow";
  t.reward_fn = "math_reward";
  t.workflow_args = "{\"k\":1}";
  t.rollout_args.temperature = 0.7;
  t.rollout_args.max_tokens = 128;
  t.repeat_times = 8;
  t.is_eval = true;
  t.index = {2, 41};
  Task back = task_from_json(task_to_json(t));
  EXPECT_EQ(back, t);
}
