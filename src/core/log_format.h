// The text of one log line (log.cpp writes it through the console); separate from log.h so tests
// can check it without a terminal.
#pragma once

#include <string>

#include "core/log.h"

namespace trinity::log {

// "HH:MM:SS info  msg": the level name, padded to 5 plus a space, wrapped in an ANSI colour when
// `color` (debug dim, info green, warn yellow, error bold red).
std::string format_line(const char* hhmmss, Level l, const std::string& msg, bool color);

}  // namespace trinity::log
