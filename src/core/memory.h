// Memory budget checks: a shape read from user input (config.json, --vocab) is checked against the
// memory the machine has before anything is allocated, so a huge size is one clear error instead
// of an abort or the OOM killer.
#pragma once

#include <cstdint>
#include <string>

namespace trinity {

// MemAvailable from /proc/meminfo in bytes; -1 when unknown.
int64_t mem_available_bytes();

// Throws ValueError "[component] <what> needs N GiB but only M GiB of memory is available" when
// `bytes` (< 0: overflowed) exceeds MemAvailable. No-op when MemAvailable is unknown.
void check_allocation(int64_t bytes, const std::string& what, const std::string& component);

// "12.3 GiB" / "512.0 MiB".
std::string format_bytes(double bytes);

}  // namespace trinity
