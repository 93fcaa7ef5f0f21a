// Explore-step leases (buffer/step_claims.h) on sqlite and on a real PostgreSQL server: steps handed
// out in order and once each, a dead owner's expired step taken over (with its previous owner named),
// a restarted owner getting its own step back, renew refused after a takeover, a step whose
// experiences already landed marked done instead of explored again, and 4 threads with their own
// connections claiming every step exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "buffer/step_claims.h"
#include "buffer/storage.h"
#include "common/pg_server.h"
#include "test_util.h"

using namespace trinity::buffer;

namespace {

class StepClaimsTest : public ::testing::TestWithParam<std::string> {
 protected:
  StorageConfig cfg(const std::string& name) {
    StorageConfig c;
    c.storage_type = "sql";
    c.name = name + "_" + std::to_string(++n_);
    c.path = GetParam() == "pg" ? trinity::test::pg_server().url()
                                : "sqlite:///" + trinity::buffer::testing::temp_dir("claims") + "/" + name + ".db";
    return c;
  }
  static inline int n_ = 0;
};

void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

TEST_P(StepClaimsTest, InOrderOnceThenWaitThenDone) {
  const auto c = cfg("order");
  auto a = open_step_claims(c), b = open_step_claims(c);
  EXPECT_EQ(a->claim("a", 3, 60), 1);
  EXPECT_EQ(b->claim("b", 3, 60), 2);
  EXPECT_EQ(a->claim("a2", 3, 60), 3);
  EXPECT_EQ(b->claim("b", 3, 60), 2) << "a restarted owner gets its own unfinished step back";
  EXPECT_EQ(b->claim("c", 3, 60), 0) << "all claimed by live owners: wait";
  a->done(1, "a"), b->done(2, "b"), a->done(3, "a2");
  EXPECT_EQ(b->claim("c", 3, 60), -1) << "all done";
  const ClaimStats s = a->stats();
  EXPECT_EQ(s.claimed, 3);
  EXPECT_EQ(s.done, 3);
}

TEST_P(StepClaimsTest, ExpiredLeaseIsTakenOver) {
  const auto c = cfg("expire");
  auto a = open_step_claims(c), b = open_step_claims(c);
  EXPECT_EQ(a->claim("a", 5, 0.3), 1);
  std::string prev;
  EXPECT_EQ(b->claim("b", 5, 60, &prev), 2) << "step 1's lease is still valid";
  EXPECT_TRUE(prev.empty());
  EXPECT_TRUE(a->renew(1, "a", 0.3));
  sleep_s(0.5);
  EXPECT_EQ(b->claim("b2", 5, 60, &prev), 1);
  EXPECT_EQ(prev, "a");
  EXPECT_FALSE(a->renew(1, "a", 60)) << "a lost step 1";
  EXPECT_TRUE(b->renew(1, "b2", 60));
}

TEST_P(StepClaimsTest, StepWhoseExperiencesLandedIsOnlyMarkedDone) {
  const auto c = cfg("landed");
  auto a = open_step_claims(c), b = open_step_claims(c);
  EXPECT_EQ(a->claim("a", 4, 0.3), 1);
  auto store = open_storage(c);  // the experience table of the same buffer
  std::vector<Experience> exps;
  for (int i = 0; i < 8; ++i) exps.push_back(trinity::buffer::testing::make_exp(8 + i));  // eid.batch "1"
  ASSERT_TRUE(store->write(exps));
  sleep_s(0.5);  // a "dies" between its write and its done mark
  std::string prev;
  EXPECT_EQ(b->claim("b", 4, 60, &prev), 2) << "step 1 is in the buffer: done, not handed out";
  EXPECT_EQ(a->stats().done, 1);
}

TEST_P(StepClaimsTest, ConcurrentClaimersTakeEveryStepOnce) {
  const auto c = cfg("race");
  constexpr int kSteps = 40;
  { open_step_claims(c); }  // creates the table before the race
  std::mutex mu;
  std::multiset<int64_t> got;
  std::vector<std::thread> ts;
  for (int w = 0; w < 4; ++w)
    ts.emplace_back([&, w] {
      auto cl = open_step_claims(c);
      const std::string me = "w" + std::to_string(w);
      for (;;) {
        const int64_t k = cl->claim(me, kSteps, 60);
        if (k < 0) break;
        if (k == 0) {
          sleep_s(0.01);
          continue;
        }
        {
          std::lock_guard<std::mutex> g(mu);
          got.insert(k);
        }
        cl->done(k, me);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(got.size(), static_cast<size_t>(kSteps));
  for (int64_t k = 1; k <= kSteps; ++k) EXPECT_EQ(got.count(k), 1u) << k;
}

INSTANTIATE_TEST_SUITE_P(Backends, StepClaimsTest, ::testing::Values("sqlite", "pg"));

TEST(StepClaimsConfig, OtherStoragesAreRefused) {
  StorageConfig c;
  c.storage_type = "file";
  c.path = "/tmp/x.jsonl";
  EXPECT_THROW(open_step_claims(c), trinity::ConfigError);
}

}  // namespace
