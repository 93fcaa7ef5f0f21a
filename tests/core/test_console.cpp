// console::Console, the one writer of the terminal: the NO_COLOR / terminal colour decision, plain
// lines off a terminal, and on a terminal a log line never sharing a screen line with a progress
// status (checked on what a terminal would show, tests/common/term_screen.h), also under threads.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/term_screen.h"
#include "core/console.h"
#include "core/log_format.h"

using trinity::console::Console;
using trinity::test::term_screen;

TEST(Console, ColorOnlyOnATerminalWithoutNoColor) {
  using trinity::console::color_enabled;
  EXPECT_TRUE(color_enabled(true, nullptr, "xterm-256color"));
  EXPECT_TRUE(color_enabled(true, "", nullptr));  // NO_COLOR set but empty: colour stays (no-color.org)
  EXPECT_FALSE(color_enabled(true, "1", "xterm"));
  EXPECT_FALSE(color_enabled(true, "0", "xterm"));  // any non-empty value
  EXPECT_FALSE(color_enabled(false, nullptr, "xterm"));
  EXPECT_FALSE(color_enabled(true, nullptr, "dumb"));
  EXPECT_EQ(trinity::console::paint("warn", "33", true), "\033[33mwarn\033[0m");
  EXPECT_EQ(trinity::console::paint("warn", "33", false), "warn");
}

TEST(Console, LogLineFormatAndColor) {
  using trinity::log::Level;
  EXPECT_EQ(trinity::log::format_line("12:00:01", Level::kInfo, "hello", false), "12:00:01 info  hello");
  EXPECT_EQ(trinity::log::format_line("12:00:01", Level::kError, "bad", false), "12:00:01 error bad");
  EXPECT_EQ(trinity::log::format_line("12:00:01", Level::kWarn, "w", true), "12:00:01 \033[33mwarn\033[0m  w");
}

TEST(Console, OffATerminalPlainLinesAndNoStatus) {
  std::string out;
  Console c(false, false, [&](std::string_view s) { out += s; });
  const int id = c.open_status();
  c.set_status(id, "explore  1/4");
  c.line("a log line");
  c.close_status(id, true);
  EXPECT_EQ(out, "a log line\n");
}

TEST(Console, LogLineClearsTheBarPrintsThenRedrawsIt) {
  std::string out;
  Console c(true, false, [&](std::string_view s) { out += s; });
  const int id = c.open_status();
  c.set_status(id, "explore  1/4 [##..]");
  c.line("12:00:00 info  saved checkpoint");
  EXPECT_EQ(out, "\r\033[Kexplore  1/4 [##..]\r\033[K12:00:00 info  saved checkpoint\nexplore  1/4 [##..]");
  c.set_status(id, "explore  2/4 [###.]");
  c.close_status(id, true);  // the final draw stays as a line
  c.line("after");
  EXPECT_EQ(term_screen(out),
            (std::vector<std::string>{"12:00:00 info  saved checkpoint", "explore  2/4 [###.]", "after", ""}));
}

TEST(Console, TwoBarsShareTheStatusLineCutToTheWidth) {
  std::string out;
  Console c(
      true, false, [&](std::string_view s) { out += s; }, [] { return 30; });
  const int a = c.open_status(), b = c.open_status();
  c.set_status(a, "explore  1/4");
  c.set_status(b, "train  0/4 [....] 0% 0.0 step/s");
  auto screen = term_screen(out);
  ASSERT_EQ(screen.size(), 1u);
  EXPECT_EQ(screen[0], std::string("explore  1/4  |  train  0/4 [....] 0% 0.0 step/s").substr(0, 29));
  c.close_status(a, false);  // dropped: only the train bar remains
  screen = term_screen(out);
  ASSERT_EQ(screen.size(), 1u);
  EXPECT_EQ(screen[0], "train  0/4 [....] 0% 0.0 step");
  EXPECT_EQ(screen[0].size(), 29u);
}

TEST(Console, ConcurrentLogLinesNeverGlueToTheBar) {
  std::string out;
  Console c(true, false, [&](std::string_view s) { out += s; });
  const int id = c.open_status();
  std::thread bar([&] {
    for (int i = 0; i < 300; ++i) c.set_status(id, "BAR " + std::to_string(i));
  });
  std::vector<std::thread> loggers;
  for (int t = 0; t < 3; ++t)
    loggers.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) c.line("LOG " + std::to_string(t) + " " + std::to_string(i));
    });
  bar.join();
  for (auto& t : loggers) t.join();
  c.close_status(id, true);
  const auto screen = term_screen(out);
  size_t logs = 0;
  for (const auto& l : screen) {
    if (l.rfind("LOG ", 0) == 0) {
      ++logs;
      EXPECT_EQ(l.find("BAR"), std::string::npos) << l;
    } else if (!l.empty()) {
      EXPECT_EQ(l.rfind("BAR ", 0), 0u) << l;
      EXPECT_EQ(l.find("LOG"), std::string::npos) << l;
    }
  }
  EXPECT_EQ(logs, 300u);
  EXPECT_EQ(screen[screen.size() - 2], "BAR 299");  // the kept final draw
}
