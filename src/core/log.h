// Minimal leveled logging to stderr with a timestamp. Thread-safe (one line per call).
// Level from TRINITY_LOG_LEVEL (debug|info|warn|error), default info.
#pragma once

#include <string>

#include "core/error.h"

namespace trinity::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

Level level();
void set_level(Level l);
void write(Level l, const std::string& msg);

template <typename... Args>
void debug(Args&&... a) { if (level() <= Level::kDebug) write(Level::kDebug, strcat(std::forward<Args>(a)...)); }
template <typename... Args>
void info(Args&&... a) { if (level() <= Level::kInfo) write(Level::kInfo, strcat(std::forward<Args>(a)...)); }
template <typename... Args>
void warn(Args&&... a) { if (level() <= Level::kWarn) write(Level::kWarn, strcat(std::forward<Args>(a)...)); }
template <typename... Args>
void error(Args&&... a) { write(Level::kError, strcat(std::forward<Args>(a)...)); }

}  // namespace trinity::log
