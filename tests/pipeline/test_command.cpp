// The `command` operator: JSONL through real external programs (sh, python3): identity, filtering by
// id, reward / info edits, retries, and every named failure (exit status, bad JSON, count mismatch,
// unknown or repeated id, timeout), with on_error fail (throws, rows untouched) and keep.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "pipeline/jsonl_command.h"
#include "pipeline/operators.h"

namespace trinity::pipeline {
namespace {

using nlohmann::json;

std::vector<buffer::Experience> exps(int n) {
  std::vector<buffer::Experience> v;
  for (int i = 0; i < n; ++i) {
    buffer::Experience e;
    e.eid.batch = "1";
    e.eid.task = i;
    e.eid.suffix = "abc00" + std::to_string(i);
    e.reward = i * 0.5;
    e.prompt_text = "p" + std::to_string(i);
    e.response_text = i == 1 ? "a bad answer" : "a good answer";
    e.info = R"({"task_index": {"index": 3, "taskset_id": 0}})";
    e.tokens = {1, 2, 3};
    e.prompt_length = 1;
    v.push_back(e);
  }
  return v;
}

OperatorConfig cmd(const json& args) {
  return {"command", args.dump()};
}

std::string py(const std::string& body) {
  return "/usr/bin/python3 -c \"import sys, json\nfor l in sys.stdin:\n    r = json.loads(l)\n" + body + "\"";
}

std::string error_of(const OperatorConfig& c, int n = 3) {
  auto v = exps(n);
  const auto before = v;
  try {
    make_operator(c)->process(v);
  } catch (const Error& e) {
    EXPECT_EQ(v, before) << "rows were changed by a failed call";
    return e.what();
  }
  return "";
}

TEST(CommandOperator, IdentityKeepsEverything) {
  auto v = exps(3);
  const auto before = v;
  auto m = make_operator(cmd({{"command", {"cat"}}}))->process(v);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(m.at("filtered_count"), 0);
  EXPECT_EQ(m.at("error_count"), 0);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(v[i].tokens, before[i].tokens);
    EXPECT_EQ(v[i].reward, before[i].reward);
    EXPECT_EQ(json::parse(v[i].info), json::parse(before[i].info));
  }
}

TEST(CommandOperator, FiltersByIdAndEditsRewardAndInfo) {
  // Drops the bad answer, halves the rewards, adds a stat (top level -> info) and an info key.
  auto v = exps(3);
  auto m = make_operator(cmd({{"command", py("    if 'bad' in r['response']: continue\n"
                                             "    print(json.dumps({'id': r['id'], 'reward': r['reward'] / 2, "
                                             "'quality': 0.9, 'info': {'judge': 'ok'}}))")}}))
               ->process(v);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(m.at("filtered_count"), 1);
  EXPECT_EQ(m.at("reward_changed_count"), 1);  // 0 / 2 == 0 is unchanged
  EXPECT_EQ(v[0].eid.task, 0);
  EXPECT_EQ(v[1].eid.task, 2);
  EXPECT_DOUBLE_EQ(*v[1].reward, 0.5);
  const json info = json::parse(v[1].info);
  EXPECT_EQ(info.at("quality"), 0.9);
  EXPECT_EQ(info.at("judge"), "ok");
  EXPECT_EQ(info.at("task_index").at("index"), 3);  // merged, not replaced
  EXPECT_EQ(v[1].response_text, "a good answer");
}

TEST(CommandOperator, RowsWithoutIdComeBackOneForOne) {
  auto v = exps(2);
  make_operator(cmd({{"command", py("    print(json.dumps({'reward': None}))")}}))->process(v);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_FALSE(v[0].reward);  // null reward: pending
}

TEST(CommandOperator, NamedFailuresLeaveTheRowsUntouched) {
  EXPECT_NE(error_of(cmd({{"command", "echo broken >&2; exit 3"}, {"max_retries", 0}})).find("exited with status 3"),
            std::string::npos);
  EXPECT_NE(error_of(cmd({{"command", "echo broken >&2; exit 3"}, {"max_retries", 0}})).find("broken"),
            std::string::npos);
  EXPECT_NE(
      error_of(cmd({{"command", "cat; echo nope"}, {"max_retries", 0}})).find("output line 4 is not a JSON object"),
      std::string::npos);
  EXPECT_NE(error_of(cmd({{"command", "head -n 1 | sed 's/\"id\":\"[^\"]*\",//'"}, {"max_retries", 0}}))
                .find("returned 1 rows for 3 sent"),
            std::string::npos);
  EXPECT_NE(error_of(cmd({{"command", "echo '{\"id\": \"zz\"}'"}, {"max_retries", 0}}))
                .find("has id \"zz\", which was not sent"),
            std::string::npos);
  EXPECT_NE(error_of(cmd({{"command",
                           "head -n 1 > /tmp/trinity_cmd_row.$$; cat /tmp/trinity_cmd_row.$$ "
                           "/tmp/trinity_cmd_row.$$; rm /tmp/trinity_cmd_row.$$"},
                          {"max_retries", 0}}))
                .find("repeats id"),
            std::string::npos);
  EXPECT_NE(error_of(cmd({{"command", "sleep 5"}, {"timeout", 0.3}, {"max_retries", 0}})).find("timed out"),
            std::string::npos);
  EXPECT_NE(
      error_of(cmd({{"command", {"/nonexistent/dj-process"}}, {"max_retries", 0}})).find("/nonexistent/dj-process"),
      std::string::npos);
  const std::string retried = error_of(cmd({{"command", "exit 1"}, {"max_retries", 2}}));
  EXPECT_NE(retried.find("after 3 attempts"), std::string::npos) << retried;
}

TEST(CommandOperator, RetrySucceedsAndKeepOnErrorCounts) {
  const std::string mark =
      (std::filesystem::temp_directory_path() / ("trinity_cmd_mark_" + std::to_string(getpid()))).string();
  std::filesystem::remove(mark);
  auto v = exps(2);
  // Fails the first time (no mark yet), then passes everything through.
  auto m = make_operator(cmd({{"command", "if [ -e " + mark + " ]; then cat; else touch " + mark + "; exit 1; fi"}}))
               ->process(v);
  EXPECT_EQ(v.size(), 2u);
  EXPECT_EQ(m.at("error_count"), 0);
  std::filesystem::remove(mark);
  auto w = exps(2);
  const auto before = w;
  auto k = make_operator(cmd({{"command", "exit 1"}, {"on_error", "keep"}, {"max_retries", 0}}))->process(w);
  EXPECT_EQ(k.at("error_count"), 1);
  EXPECT_EQ(w, before);
}

TEST(CommandOperator, ArgumentErrors) {
  auto msg = [](const json& a) {
    try {
      make_operator(cmd(a));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg(json::object()).find("args.command is required"), std::string::npos);
  EXPECT_NE(msg({{"command", json::array()}}).find("non-empty list"), std::string::npos);
  EXPECT_NE(msg({{"command", "cat"}, {"on_error", "ignore"}}).find("on_error must be 'fail' or 'keep'"),
            std::string::npos);
  EXPECT_NE(msg({{"command", "cat"}, {"timeout", 0}}).find("timeout must be > 0"), std::string::npos);
  EXPECT_NE(msg({{"command", "cat"}, {"timout", 3}}).find("did you mean 'timeout'"), std::string::npos);
}

}  // namespace
}  // namespace trinity::pipeline
