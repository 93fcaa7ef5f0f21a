// Parallel loops over OpenMP. One pool for trinity's kernels and (with the OpenMP build of
// OpenBLAS) for BLAS too. Idle workers follow libgomp's default: spin briefly, then sleep.
#pragma once

#include <cstdint>

namespace trinity {

// Threads trinity kernels and BLAS use (default: all cores; TRINITY_THREADS overrides).
int num_threads();
void set_num_threads(int n);

// Calls fn(i) for i in [0, n) across the pool. fn must not throw.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// Like parallel_for with dynamic scheduling, for uneven work items.
template <typename Fn>
void parallel_for_dynamic(int64_t n, Fn&& fn) {
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace trinity
