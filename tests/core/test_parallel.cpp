// The core budget per role (core/parallel.h): a tagged thread gets every core while the other role is
// idle and its share while both are busy; the OpenMP team and OpenMP's per-thread setting follow.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/parallel.h"

namespace trinity {
namespace {

// Largest team that ran the items of one parallel_for (enough work to go parallel).
int team_size() {
  std::atomic<int> most{0};
  parallel_for(
      64,
      [&](int64_t) {
        const int n = omp_get_num_threads();
        int m = most.load();
        while (n > m && !most.compare_exchange_weak(m, n)) {
        }
      },
      kParallelMinWork);
  return most.load();
}

class ParallelBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = max_threads();
    set_num_threads(4);  // more threads than cores is fine for OpenMP: the test sees team sizes only
  }
  void TearDown() override {
    set_role_threads(0, 0);
    set_thread_role(Role::kNone);
    set_num_threads(saved_);
  }
  int saved_ = 1;
};

TEST_F(ParallelBudget, UntaggedThreadsAlwaysGetEveryCore) {
  set_role_threads(1, 3);
  const RoleBusy t(Role::kTrainer), e(Role::kExplorer);
  EXPECT_EQ(num_threads(), 4);
  EXPECT_EQ(team_size(), 4);
}

TEST_F(ParallelBudget, ARoleGetsItsShareOnlyWhileTheOtherIsBusy) {
  set_role_threads(1, 3);
  set_thread_role(Role::kExplorer);
  EXPECT_EQ(num_threads(), 4);
  EXPECT_EQ(team_size(), 4);
  {
    const RoleBusy self(Role::kExplorer);  // its own work does not shrink it
    EXPECT_EQ(num_threads(), 4);
  }
  {
    const RoleBusy other(Role::kTrainer);
    EXPECT_EQ(num_threads(), 1);
    EXPECT_EQ(team_size(), 1);
    EXPECT_EQ(omp_get_max_threads(), 1);  // what OpenBLAS's OpenMP build threads a direct call by
    {
      const RoleBusy nested(Role::kTrainer);
      EXPECT_EQ(num_threads(), 1);
    }
    EXPECT_EQ(num_threads(), 1);  // one of two busy marks left
  }
  EXPECT_EQ(num_threads(), 4);
  EXPECT_EQ(omp_get_max_threads(), 4);

  set_thread_role(Role::kTrainer);
  const RoleBusy other(Role::kExplorer);
  EXPECT_EQ(num_threads(), 3);
  EXPECT_EQ(team_size(), 3);
}

TEST_F(ParallelBudget, BusyMarksOfAnotherThreadCount) {
  set_role_threads(2, 2);
  std::atomic<int> seen{0};
  std::atomic<bool> marked{false}, done{false};
  std::thread trainer([&] {
    set_thread_role(Role::kTrainer);
    const RoleBusy busy(Role::kTrainer);
    marked = true;
    while (!done) std::this_thread::yield();
  });
  set_thread_role(Role::kExplorer);
  while (!marked) std::this_thread::yield();
  seen = num_threads();
  done = true;
  trainer.join();
  EXPECT_EQ(seen.load(), 2);
  EXPECT_EQ(num_threads(), 4);
}

TEST_F(ParallelBudget, NoSharesMeansNoBudget) {
  set_role_threads(0, 0);
  set_thread_role(Role::kExplorer);
  const RoleBusy other(Role::kTrainer);
  EXPECT_EQ(num_threads(), 4);
  set_role_threads(2, 0);  // both must be set
  EXPECT_EQ(num_threads(), 4);
}

}  // namespace
}  // namespace trinity
