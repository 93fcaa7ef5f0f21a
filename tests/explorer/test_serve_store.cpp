// Serve mode's call history (explorer/serve_store.h) on sqlite and on a real PostgreSQL server, one
// suite for both: record -> feedback -> ready (grouped by task/run, calls in order, arrays exact) ->
// commit; unknown and committed ids in feedback; re-recording a call; dropping stale unrewarded calls;
// counts; meta values; and a second store on the same database seeing the first one's rows (two
// serve processes sharing one history).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/pg_server.h"
#include "explorer/serve_store.h"

using namespace trinity;
using explorer::ServeStore;

namespace {

tok::RecordedCall call(const std::string& id, int64_t choice, double start, int n) {
  tok::RecordedCall c;
  c.id = id, c.choice = choice, c.start = start, c.model_version = 3, c.finish_reason = "stop";
  for (int i = 0; i < n; ++i) {
    c.prompt_ids.push_back(100 + i);
    c.ids.push_back(7 * i + static_cast<int>(choice));
    c.logprobs.push_back(-0.125f * static_cast<float>(i) - 1e-7f);
  }
  return c;
}

class ServeStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string where() {
    if (GetParam() == "pg") return trinity::test::pg_server().url();
    const auto d = std::filesystem::temp_directory_path() / ("trinity-serve-store-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return (d / (std::to_string(++n_) + ".db")).string();
  }
  std::string table() { return "t" + std::to_string(++n_); }
  static inline int n_ = 0;
};

TEST_P(ServeStoreTest, LifeCycle) {
  const std::string w = where(), t = table();
  auto s = explorer::open_serve_store(w, t);
  s->record(call("a", 0, 10.0, 3));
  s->record(call("a", 1, 10.0, 4));
  s->record(call("b", 0, 11.0, 2));
  s->record(call("old", 0, 1.0, 2));
  s->record(call("b", 0, 12.0, 5));  // re-recorded (a retried request): replaces the row
  auto k = s->counts();
  EXPECT_EQ(k.recorded, 4);
  const auto fb = s->feedback({"a", "b", "nope"}, 0.75, "task1", 2);
  EXPECT_EQ(fb.updated, 3);
  EXPECT_EQ(fb.unknown, std::vector<std::string>{"nope"});
  EXPECT_EQ(s->drop_pending_older_than(5.0), 1);  // "old" never got a reward
  const auto groups = s->ready();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].task_id, "task1");
  EXPECT_EQ(groups[0].run_id, 2);
  EXPECT_DOUBLE_EQ(groups[0].reward, 0.75);
  ASSERT_EQ(groups[0].calls.size(), 3u);
  EXPECT_EQ(groups[0].calls[0].id, "a");
  EXPECT_EQ(groups[0].calls[1].choice, 1);
  EXPECT_EQ(groups[0].calls[2].id, "b");
  const auto want = call("b", 0, 12.0, 5);
  EXPECT_EQ(groups[0].calls[2].ids, want.ids);
  EXPECT_EQ(groups[0].calls[2].prompt_ids, want.prompt_ids);
  EXPECT_EQ(groups[0].calls[2].logprobs, want.logprobs);  // bit-exact floats
  EXPECT_DOUBLE_EQ(groups[0].calls[2].start, 12.0);
  EXPECT_EQ(groups[0].calls[2].model_version, 3);
  s->mark_committed({{"a", 0}, {"a", 1}, {"b", 0}});
  EXPECT_TRUE(s->ready().empty());
  k = s->counts();
  EXPECT_EQ(k.committed, 3);
  EXPECT_EQ(k.recorded + k.ready, 0);
  const auto again = s->feedback({"a"}, 1.0, "task1", 2);  // committed rows take no more feedback
  EXPECT_EQ(again.updated, 0);
  EXPECT_EQ(s->get_meta("explore_step", 7), 7);
  s->set_meta("explore_step", 4);
  s->set_meta("explore_step", 5);
  EXPECT_EQ(s->get_meta("explore_step", 0), 5);
}

TEST_P(ServeStoreTest, TwoStoresShareOneHistory) {
  const std::string w = where(), t = table();
  auto a = explorer::open_serve_store(w, t), b = explorer::open_serve_store(w, t);
  a->record(call("x", 0, 1.0, 2));
  EXPECT_EQ(b->feedback({"x"}, 1.0, "t", 0).updated, 1);  // feedback reaches the other process's call
  ASSERT_EQ(a->ready().size(), 1u);
  b->set_meta("explore_step", 9);
  EXPECT_EQ(a->get_meta("explore_step", 0), 9);
}

INSTANTIATE_TEST_SUITE_P(Backends, ServeStoreTest, ::testing::Values("sqlite", "pg"));

}  // namespace
