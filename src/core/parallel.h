// Parallel loops over OpenMP. One pool for trinity's kernels and (with the OpenMP build of
// OpenBLAS) for BLAS too. Loops hand out chunks dynamically (several per thread), so a worker that
// another process has descheduled does not hold up the rest: the running threads take its chunks.
// Idle workers spin briefly, then sleep (GOMP_SPINCOUNT, set at process start: see tensor/blas.h).
#pragma once

#include <cstdint>

namespace trinity {

// Threads trinity kernels and BLAS use (default: all cores; TRINITY_THREADS overrides).
int num_threads();
void set_num_threads(int n);

// Below this much work (in rough multiply-adds) a loop runs on the calling thread: waking the pool
// costs more than it saves (decode steps of small models are made of such loops).
inline constexpr int64_t kParallelMinWork = int64_t{1} << 20;

// Chunk size for a loop of n items: about 4 chunks per thread.
inline int64_t parallel_chunk(int64_t n) {
  const int64_t c = n / (4 * static_cast<int64_t>(num_threads()));
  return c > 0 ? c : 1;
}

// Calls fn(i) for i in [0, n) across the pool, in contiguous chunks taken dynamically;
// `work_per_item` (multiply-adds, roughly) lets small loops stay serial. fn must not throw, and
// must not depend on which thread runs an item.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn, int64_t work_per_item = kParallelMinWork) {
  const bool par = n > 1 && n * work_per_item >= kParallelMinWork;
  const int64_t chunk = par ? parallel_chunk(n) : 1;
#pragma omp parallel for schedule(dynamic, chunk) if (par)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// Like parallel_for with one item per chunk, for uneven work items.
template <typename Fn>
void parallel_for_dynamic(int64_t n, Fn&& fn, int64_t work_per_item = kParallelMinWork) {
#pragma omp parallel for schedule(dynamic, 1) if (n > 1 && n * work_per_item >= kParallelMinWork)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace trinity
