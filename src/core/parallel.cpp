// Thread count shared by trinity kernels (OpenMP) and BLAS.
#include "core/parallel.h"

#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <thread>

namespace trinity {

namespace {
// Read by every kernel thread and set by the launcher while the explorer and trainer threads run:
// an atomic (relaxed: the value is a hint copied into each thread's OpenMP setting, no ordering).
std::atomic<int>& threads_ref() {
  static std::atomic<int> n{[] {
    if (const char* s = std::getenv("TRINITY_THREADS")) {
      const int v = std::atoi(s);
      if (v > 0) return v;
    }
    const unsigned hc = std::thread::hardware_concurrency();
    return hc ? static_cast<int>(hc) : 1;
  }()};
  return n;
}
}  // namespace

int num_threads() {
  return threads_ref().load(std::memory_order_relaxed);
}

void set_num_threads(int n) {
  n = n > 0 ? n : 1;
  threads_ref().store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
}

}  // namespace trinity
