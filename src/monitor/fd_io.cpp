// POSIX write loop and wall clock for the monitor writers (see fd_io.h).
#include "monitor/fd_io.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "core/timer.h"

namespace trinity::monitor {

void write_all(int fd, std::string_view bytes, const std::string& path) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError("monitor", strcat("write to ", path, " failed: ", std::strerror(errno)));
    }
    off += static_cast<size_t>(n);
  }
}

double unix_seconds() {
  return wall_seconds();
}

}  // namespace trinity::monitor
