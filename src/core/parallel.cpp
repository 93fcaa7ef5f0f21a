// Thread count shared by trinity kernels (OpenMP) and BLAS.
#include "core/parallel.h"

#include <omp.h>

#include <cstdlib>
#include <thread>

namespace trinity {

namespace {
int& threads_ref() {
  static int n = [] {
    if (const char* s = std::getenv("TRINITY_THREADS")) {
      const int v = std::atoi(s);
      if (v > 0) return v;
    }
    const unsigned hc = std::thread::hardware_concurrency();
    return hc ? static_cast<int>(hc) : 1;
  }();
  return n;
}
}  // namespace

int num_threads() { return threads_ref(); }

void set_num_threads(int n) {
  threads_ref() = n > 0 ? n : 1;
  omp_set_num_threads(threads_ref());
}

}  // namespace trinity
