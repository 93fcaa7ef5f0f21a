// Memory budget checks: a shape read from user input (config.json, --vocab) is checked against the
// memory the machine has before anything is allocated, so a huge size is one clear error instead
// of an abort or the OOM killer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trinity {

// MemAvailable from /proc/meminfo in bytes; -1 when unknown.
int64_t mem_available_bytes();

// Throws ValueError "[component] <what> needs N GiB but only M GiB of memory is available" when
// `bytes` (< 0: overflowed) exceeds MemAvailable. No-op when MemAvailable is unknown.
void check_allocation(int64_t bytes, const std::string& what, const std::string& component);

// A 64-byte aligned block for std::free: large ones (>= 8 MiB) 2 MiB aligned and marked for
// transparent huge pages, so filling them takes 512x fewer page faults (packing a 1.5B model's
// weights: seconds of kernel time). nullptr when out of memory.
void* alloc_large(size_t bytes);

// "12.3 GiB" / "512.0 MiB".
std::string format_bytes(double bytes);

}  // namespace trinity
