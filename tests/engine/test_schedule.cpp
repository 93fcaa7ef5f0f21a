// The engine's scheduling arithmetic (engine/schedule.h): KV pages committed per request, the
// admission decision under each budget, and the split of a step's prefill budget into chunks.
#include <gtest/gtest.h>

#include "engine/schedule.h"

using namespace trinity::engine;

TEST(Schedule, PagesNeededCountPromptAndEverySample) {
  EXPECT_EQ(pages_needed(5, 1, 8, 4), 2 + (2 + 1));  // prompt 2 pages, 1 sample: 2 + fork page
  EXPECT_EQ(pages_needed(4, 3, 1, 4), 1 + 3 * (1 + 1));
  EXPECT_EQ(pages_needed(16, 2, 16, 16), 1 + 2 * 2);
}

TEST(Schedule, AdmissionRespectsEachBudget) {
  AdmissionState s;
  s.total_pages = 100, s.max_prefill_tokens = 64, s.max_running = 8;
  EXPECT_EQ(admission(10, 2, s), Admission::kAdmit);
  EXPECT_EQ(admission(101, 1, s), Admission::kNever) << "more than the whole cache";
  s.committed_pages = 95;
  EXPECT_EQ(admission(10, 1, s), Admission::kWait) << "KV pages committed to others";
  s.committed_pages = 0, s.pending_prefill = 64;
  EXPECT_EQ(admission(10, 1, s), Admission::kWait) << "a step's prefill budget already pending";
  s.pending_prefill = 0, s.running_samples = 7;
  EXPECT_EQ(admission(10, 2, s), Admission::kWait) << "max_running samples";
  s.running_samples = 0, s.idle = true;
  EXPECT_EQ(admission(10, 20, s), Admission::kAdmit) << "n > max_running still runs when idle";
  s.idle = false;
  EXPECT_EQ(admission(10, 20, s), Admission::kWait);
}

TEST(Schedule, PrefillChunksFillTheBudgetInAdmissionOrder) {
  EXPECT_EQ(plan_prefill_chunks({3, 10, 4}, 8), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(plan_prefill_chunks({20}, 8), (std::vector<int64_t>{8}));
  EXPECT_EQ(plan_prefill_chunks({2, 2, 2}, 8), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(plan_prefill_chunks({8, 1}, 8), (std::vector<int64_t>{8})) << "stops at the first request with none";
  EXPECT_TRUE(plan_prefill_chunks({}, 8).empty());
}
