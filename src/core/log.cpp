// Logging implementation: one line per call through console::Console::err(), which serialises it
// with progress-bar redraws (a bar on a terminal is cleared first and redrawn after the line); the
// level name is coloured on a terminal unless NO_COLOR is set (console::use_color).
#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "core/console.h"
#include "core/log_format.h"

namespace trinity::log {
namespace {

Level level_from_env() {
  const char* s = std::getenv("TRINITY_LOG_LEVEL");
  if (!s) return Level::kInfo;
  if (!std::strcmp(s, "debug")) return Level::kDebug;
  if (!std::strcmp(s, "warn")) return Level::kWarn;
  if (!std::strcmp(s, "error")) return Level::kError;
  return Level::kInfo;
}

std::atomic<int>& level_ref() {
  static std::atomic<int> l{static_cast<int>(level_from_env())};
  return l;
}

}  // namespace

Level level() { return static_cast<Level>(level_ref().load(std::memory_order_relaxed)); }
void set_level(Level l) { level_ref().store(static_cast<int>(l)); }

std::string format_line(const char* hhmmss, Level l, const std::string& msg, bool color) {
  static const char* names[] = {"debug", "info", "warn", "error"};
  static const char* sgr[] = {"2", "32", "33", "1;31"};  // dim, green, yellow, bold red
  const int i = static_cast<int>(l);
  std::string s = hhmmss;
  s.append(" ").append(console::paint(names[i], sgr[i], color));
  s.append(6 - std::strlen(names[i]), ' ').append(msg);
  return s;
}

void write(Level l, const std::string& msg) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%H:%M:%S", &tm);
  console::Console& c = console::Console::err();
  c.line(format_line(ts, l, msg, c.color()));
}

}  // namespace trinity::log
