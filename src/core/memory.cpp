// Memory budget checks (see memory.h).
#include "core/memory.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace trinity {

int64_t mem_available_bytes() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  int64_t kb = -1;
  while (std::fgets(line, sizeof line, f)) {
    long long v = 0;
    if (std::sscanf(line, "MemAvailable: %lld kB", &v) == 1) {
      kb = v;
      break;
    }
  }
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

void* alloc_large(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (bytes < 4 * kHuge) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  const size_t n = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, n);
  if (p) madvise(p, n, MADV_HUGEPAGE);  // advice only: fine if the kernel ignores it
  return p;
}

std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024));
  return buf;
}

void check_allocation(int64_t bytes, const std::string& what, const std::string& component) {
  if (bytes < 0) throw ValueError(component, strcat(what, ": the size overflows 64 bits (shape far too large)"));
  const int64_t avail = mem_available_bytes();
  if (avail >= 0 && bytes > avail)
    throw ValueError(component, strcat(what, " needs ", format_bytes(static_cast<double>(bytes)), " but only ",
                                       format_bytes(static_cast<double>(avail)),
                                       " of memory is available (MemAvailable in /proc/meminfo)"));
}

}  // namespace trinity
