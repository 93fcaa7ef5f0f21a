// Parallel loops over OpenMP. One pool for trinity's kernels and (with the OpenMP build of
// OpenBLAS) for BLAS too. Idle workers follow libgomp's default: spin briefly, then sleep.
#pragma once

#include <cstdint>

namespace trinity {

// Threads trinity kernels and BLAS use (default: all cores; TRINITY_THREADS overrides).
int num_threads();
void set_num_threads(int n);

// Below this much work (in rough multiply-adds) a loop runs on the calling thread: waking the pool
// costs more than it saves (decode steps of small models are made of such loops).
inline constexpr int64_t kParallelMinWork = int64_t{1} << 20;

// Calls fn(i) for i in [0, n) across the pool; `work_per_item` (multiply-adds, roughly) lets small
// loops stay serial. fn must not throw.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn, int64_t work_per_item = kParallelMinWork) {
#pragma omp parallel for schedule(static) if (n > 1 && n * work_per_item >= kParallelMinWork)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// Like parallel_for with dynamic scheduling, for uneven work items.
template <typename Fn>
void parallel_for_dynamic(int64_t n, Fn&& fn, int64_t work_per_item = kParallelMinWork) {
#pragma omp parallel for schedule(dynamic, 1) if (n > 1 && n * work_per_item >= kParallelMinWork)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace trinity
