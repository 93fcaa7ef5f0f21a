// Progress bar + logging on a real terminal: runs console_pty_child on a pseudo-terminal (forkpty)
// and checks what the terminal shows: every log line on a line of its own (never glued after a bar
// draw), the bar's final state kept as a line, colour on a terminal and none with NO_COLOR=1.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "common/term_screen.h"

namespace {

// Runs the helper with stdout/stderr on a pty; returns every byte the terminal received.
std::string run_on_pty(bool no_color) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return "forkpty failed";
  if (pid == 0) {
    if (no_color)
      ::setenv("NO_COLOR", "1", 1);
    else
      ::unsetenv("NO_COLOR");
    ::setenv("TERM", "xterm", 1);
    ::setenv("TRINITY_LOG_LEVEL", "info", 1);
    const std::string exe = std::string(TRINITY_BINARY_DIR) + "/tests/monitor/console_pty_child";
    ::execl(exe.c_str(), exe.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EIO once the child closed the slave side
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::close(master);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) out += "\n<child failed>";
  return out;
}

}  // namespace

TEST(ConsolePty, LogLinesWhileABarIsShownAreNeverGluedToIt) {
  const std::string raw = run_on_pty(false);
  const auto screen = trinity::test::term_screen(raw);
  std::vector<std::string> lines;
  for (const auto& l : screen)
    if (!l.empty()) lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u) << raw;
  EXPECT_NE(lines[0].find("info  step 1 done"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("warn  a warning"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2].rfind("explore  4/4 [##########] 100%", 0), 0u) << lines[2];
  EXPECT_NE(lines[3].find("info  after the bar"), std::string::npos) << lines[3];
  for (size_t i : {0, 1, 3}) EXPECT_EQ(lines[i].find("explore"), std::string::npos) << lines[i];
  EXPECT_NE(raw.find("\r\033[K"), std::string::npos);             // the bar line is cleared before a log line
  EXPECT_NE(raw.find("\033[33mwarn\033[0m"), std::string::npos);  // colour on a terminal
}

TEST(ConsolePty, NoColorTurnsColourOff) {
  const std::string raw = run_on_pty(true);
  EXPECT_NE(raw.find("a warning"), std::string::npos) << raw;
  EXPECT_EQ(raw.find("\033[3"), std::string::npos) << raw;  // no SGR colour sequence
  EXPECT_EQ(raw.find("\033[0m"), std::string::npos) << raw;
}
