// Small POSIX helpers shared by the monitor writers: write a whole buffer with one write() call
// where the kernel allows (O_APPEND files: a line lands whole, never interleaved with another
// writer's), and the wall clock as unix seconds.
#pragma once

#include <string>
#include <string_view>

namespace trinity::monitor {

// Writes all of bytes to fd (retrying on EINTR / short writes); IoError naming path on failure.
void write_all(int fd, std::string_view bytes, const std::string& path);
// Seconds since the unix epoch, with sub-second precision.
double unix_seconds();

}  // namespace trinity::monitor
