// SIGINT / SIGTERM as a clean stop request, for the commands that run until stopped (run, bench,
// serve). The first signal sets a stop flag, prints `message` to stderr and wakes wait(); a second
// signal exits at once with 128 + signo (the user pressed Ctrl-C twice). The handler only touches
// lock-free atomics and write(2), so it is async-signal-safe. One StopSignals at a time per process;
// its destructor restores the previous handlers.
#pragma once

#include <atomic>
#include <string>

namespace trinity {

class StopSignals {
 public:
  // `message`: printed once on the first signal (e.g. "stopping after the current step").
  explicit StopSignals(std::string message);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  const std::atomic<bool>* flag() const;  // true once a signal arrived
  bool stopped() const { return flag()->load(); }
  int signal_number() const;  // the first signal received, 0 if none

  // Blocks until a signal arrives (returns its number) or wake() is called (returns 0).
  int wait();
  void wake();
};

}  // namespace trinity
