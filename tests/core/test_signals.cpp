// StopSignals (the clean-stop helper of run / bench / serve) and the shared thread count.
#include <gtest/gtest.h>

#include <csignal>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/signals.h"

using namespace trinity;

TEST(StopSignals, FirstSignalSetsTheFlagAndWakesWait) {
  StopSignals s("");
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.signal_number(), 0);
  std::raise(SIGTERM);
  EXPECT_TRUE(s.stopped());
  EXPECT_TRUE(s.flag()->load());
  EXPECT_EQ(s.signal_number(), SIGTERM);
  EXPECT_EQ(s.wait(), SIGTERM);
}

TEST(StopSignals, WakeReturnsZeroAndHandlersAreRestored) {
  {
    StopSignals s("");
    std::thread t([&] { s.wake(); });
    EXPECT_EQ(s.wait(), 0);
    t.join();
    EXPECT_FALSE(s.stopped());
  }
  struct sigaction now {};
  sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL) << "the previous SIGINT handler is back";
}

TEST(StopSignals, OneAtATime) {
  StopSignals a("");
  EXPECT_THROW(StopSignals b(""), UnsupportedError);
}

TEST(StopSignals, SecondSignalExitsAtOnce) {
  EXPECT_EXIT(
      {
        StopSignals s("stopping");
        std::raise(SIGINT);
        std::raise(SIGINT);
        std::exit(0);  // not reached
      },
      ::testing::ExitedWithCode(128 + SIGINT), "stopping");
}

TEST(Parallel, ThreadCountIsSharedAcrossThreads) {
  const int before = num_threads();
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([i] {
      for (int k = 0; k < 1000; ++k) {
        set_num_threads(1 + (i + k) % 2);
        EXPECT_GE(num_threads(), 1);
      }
    });
  for (auto& t : ts) t.join();
  set_num_threads(before);
  EXPECT_EQ(num_threads(), before);
}
