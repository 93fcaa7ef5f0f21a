// check_json_depth: counts nesting outside strings, throws a ValueError naming the input.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/json_limits.h"

using namespace trinity;

TEST(JsonLimits, DepthIgnoresBracketsInStrings) {
  EXPECT_EQ(json_depth(R"({"a": [1, {"b": "[[[{{\"[["}]})"), 3);
  EXPECT_EQ(json_depth("42"), 0);
  EXPECT_EQ(json_depth("[[]]"), 2);
}

TEST(JsonLimits, DeepTextThrowsNamingTheInput) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  try {
    check_json_depth(deep, "tasks.jsonl line 3", 256, "buffer");
    FAIL() << "no throw";
  } catch (const ValueError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("[buffer] tasks.jsonl line 3: JSON nested deeper than 256", 0), 0u) << m;
  }
  EXPECT_NO_THROW(check_json_depth(std::string(256, '[') + std::string(256, ']'), "x", 256));
  EXPECT_THROW(check_json_depth(std::string(257, '{'), "x", 256), ValueError);
}
