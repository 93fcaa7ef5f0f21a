// ProgressBar output (non-TTY: one plain line per 5 % or 10 s; TTY: "\r\033[K" redraws) and the
// per-step summary line.
#include <gtest/gtest.h>

#include <thread>

#include "common/term_screen.h"
#include "monitor/progress.h"

using namespace trinity::monitor;

TEST(Progress, RenderFormat) {
  std::string out;
  ProgressBar bar("explore", 40, false, [&](std::string_view s) { out += s; });
  EXPECT_EQ(bar.render(12, 10.0), "explore  12/40 [###.......] 30% 1.2 step/s ETA 00:23");
  EXPECT_EQ(bar.render(0, 0.0), "explore  0/40 [..........] 0% 0.0 step/s ETA --:--");
  EXPECT_EQ(bar.render(40, 20.0), "explore  40/40 [##########] 100% 2.0 step/s ETA 00:00");
  ProgressBar open("train", 0, false, [](std::string_view) {});
  EXPECT_EQ(open.render(5, 2.0), "train  5 2.5 step/s");
  EXPECT_EQ(format_duration(3725), "1:02:05");
  EXPECT_EQ(format_duration(59.6), "01:00");
}

TEST(Progress, NonTtyPrintsEveryFivePercentOrTenSeconds) {
  std::vector<std::string> lines;
  std::string buf;
  ProgressBar bar("explore", 100, false, [&](std::string_view s) { buf += s; });
  for (int i = 0; i <= 100; ++i) bar.update_at(i, i * 0.01);  // fast: only the 5 % crossings print
  size_t pos;
  while ((pos = buf.find('\n')) != std::string::npos) {
    lines.push_back(buf.substr(0, pos));
    buf.erase(0, pos + 1);
  }
  EXPECT_TRUE(buf.empty());
  ASSERT_EQ(lines.size(), 21u);  // 0, 5, ..., 100 %
  EXPECT_EQ(lines[1].rfind("explore  5/100 [", 0), 0u) << lines[1];
  for (const auto& l : lines) EXPECT_EQ(l.find('\r'), std::string::npos);
  bar.finish();  // 100 % already printed: no duplicate line
  EXPECT_TRUE(buf.empty()) << buf;

  std::string slow;
  ProgressBar bar2("sync", 1000, false, [&](std::string_view s) { slow += s; });
  bar2.update_at(1, 0.0);   // first update prints
  bar2.update_at(2, 5.0);   // 0.2 %, 5 s: quiet
  bar2.update_at(3, 10.5);  // 10 s passed: prints
  bar2.update_at(4, 11.0);  // quiet
  EXPECT_EQ(std::count(slow.begin(), slow.end(), '\n'), 2);
  EXPECT_NE(slow.find("sync  3/1000"), std::string::npos) << slow;
  bar2.finish();  // prints the final state once
  EXPECT_EQ(std::count(slow.begin(), slow.end(), '\n'), 3);
}

TEST(Progress, TtyRedrawsInPlace) {
  std::string out;
  ProgressBar bar("explore", 4, true, [&](std::string_view s) { out += s; });
  for (int i = 1; i <= 4; ++i) bar.update_at(i, i * 1.0);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\r'), 4);  // 4 updates, each "\r\033[K" + bar
  EXPECT_EQ(out.find('\n'), std::string::npos);
  bar.finish();
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
  const auto screen = trinity::test::term_screen(out);  // what the terminal shows: the final draw
  ASSERT_EQ(screen.size(), 2u) << out;
  EXPECT_EQ(screen[0].rfind("explore  4/4 [##########] 100%", 0), 0u) << screen[0];
  EXPECT_EQ(screen[1], "");
}

TEST(Progress, TtyBarDestroyedUnfinishedKeepsItsLastDraw) {
  std::string out;
  {
    ProgressBar bar("train", 10, true, [&](std::string_view s) { out += s; });
    bar.update_at(3, 1.0);
  }
  EXPECT_EQ(trinity::test::term_screen(out),
            (std::vector<std::string>{"train  3/10 [###.......] 30% 3.0 step/s ETA 00:02", ""}));
}

TEST(Progress, ThreadSafeAdvance) {
  std::string out;
  ProgressBar bar("explore", 4000, false, [&](std::string_view s) { out += s; });
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) ts.emplace_back([&] { for (int i = 0; i < 1000; ++i) bar.advance(); });
  for (auto& t : ts) t.join();
  bar.finish();
  EXPECT_NE(out.find("4000/4000 [##########] 100%"), std::string::npos) << out;
}

TEST(Progress, SummaryLine) {
  const std::map<std::string, double> m = {
      {"actor/pg_loss", -0.012}, {"critic/score/mean", 0.41}, {"actor/grad_norm", 0.9}};
  EXPECT_EQ(summary_line("trainer", 3, m, {"actor/pg_loss", "reward=critic/score/mean", "actor/grad_norm"}, 1.3),
            "[trainer] step 3 | pg_loss -0.012 | reward 0.41 | grad_norm 0.9 | 1.3 s");
  EXPECT_EQ(summary_line("explorer", 1, m, {"critic/score/mean", "missing/key"}),
            "[explorer] step 1 | score 0.41");
  EXPECT_EQ(summary_line("trainer", 4, m, {"actor/grad_norm"}, 0.0243), "[trainer] step 4 | grad_norm 0.9 | 24 ms");
}
