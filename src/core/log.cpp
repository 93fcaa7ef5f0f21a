// Logging implementation: one mutex-guarded fprintf per line.
#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

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

std::mutex& mu() {
  static std::mutex m;
  return m;
}

}  // namespace

Level level() { return static_cast<Level>(level_ref().load(std::memory_order_relaxed)); }
void set_level(Level l) { level_ref().store(static_cast<int>(l)); }

void write(Level l, const std::string& msg) {
  static const char* names[] = {"debug", "info", "warn", "error"};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%H:%M:%S", &tm);
  std::lock_guard<std::mutex> g(mu());
  std::fprintf(stderr, "%s %-5s %s\n", ts, names[static_cast<int>(l)], msg.c_str());
}

}  // namespace trinity::log
