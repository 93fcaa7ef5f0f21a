// Wall-clock timer in seconds (steady clock), and the current time as seconds since the epoch.
#pragma once

#include <chrono>

namespace trinity {

// Seconds since the Unix epoch (system clock): timestamps that other processes and restarts compare.
inline double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class Timer {
 public:
  Timer() : t0_(std::chrono::steady_clock::now()) {}
  void reset() { t0_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace trinity
