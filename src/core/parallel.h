// Parallel loops over OpenMP. One pool for trinity's kernels and (with the OpenMP build of
// OpenBLAS) for BLAS too. Loops hand out chunks dynamically (several per thread), so a worker that
// another process has descheduled does not hold up the rest: the running threads take its chunks.
// Idle workers spin briefly, then sleep (GOMP_SPINCOUNT, set at process start: see tensor/blas.h).
//
// Core budget per role: in `both` mode the explorer's engines and the trainer run their kernels side
// by side in one process. A thread tagged with a role (set_thread_role) gets every core while the
// other role is idle and its share of them (set_role_threads) while both are busy (RoleBusy marks
// the work), so the two never run more threads than there are cores. The budget changes speed
// only: reductions sum fixed blocks in block order, and tensor::gemm tiles and threads OpenBLAS by
// max_threads(), not by the share (test GemmBitsDoNotFollowTheRoleBudget).
#pragma once

#include <cstdint>

namespace trinity {

// Threads trinity kernels and BLAS use now on the calling thread (default: all cores;
// TRINITY_THREADS overrides; less while another role is busy, see above).
int num_threads();
// All cores' worth: the process-wide setting, whatever the roles.
int max_threads();
void set_num_threads(int n);

enum class Role : int { kNone = -1, kExplorer = 0, kTrainer = 1 };

// Tags the calling thread's kernels as `role`'s (kNone: untagged, always max_threads()).
void set_thread_role(Role role);
Role thread_role();

// Threads each role gets while the other is busy too; both > 0 turns the budget on, 0 turns it
// off (every thread gets max_threads(), as before). Set once before the roles start.
void set_role_threads(int explorer, int trainer);

// Marks `role` busy (has kernels to run) for the object's lifetime; nests and counts.
class RoleBusy {
 public:
  explicit RoleBusy(Role role);
  ~RoleBusy();
  RoleBusy(const RoleBusy&) = delete;
  RoleBusy& operator=(const RoleBusy&) = delete;

 private:
  Role role_;
};

// Below this much work (in rough multiply-adds) a loop runs on the calling thread: waking the pool
// costs more than it saves (decode steps of small models are made of such loops).
inline constexpr int64_t kParallelMinWork = int64_t{1} << 20;

// Chunk size for a loop of n items over nt threads: about 4 chunks per thread.
inline int64_t parallel_chunk(int64_t n, int nt) {
  const int64_t c = n / (4 * static_cast<int64_t>(nt));
  return c > 0 ? c : 1;
}

// Calls fn(i) for i in [0, n) across the pool, in contiguous chunks taken dynamically;
// `work_per_item` (multiply-adds, roughly) lets small loops stay serial. fn must not throw, and
// must not depend on which thread runs an item.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn, int64_t work_per_item = kParallelMinWork) {
  const int nt = num_threads();
  const bool par = nt > 1 && n > 1 && n * work_per_item >= kParallelMinWork;
  const int64_t chunk = par ? parallel_chunk(n, nt) : 1;
#pragma omp parallel for schedule(dynamic, chunk) num_threads(nt) if (par)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// Like parallel_for with one item per chunk, for uneven work items.
template <typename Fn>
void parallel_for_dynamic(int64_t n, Fn&& fn, int64_t work_per_item = kParallelMinWork) {
  const int nt = num_threads();
#pragma omp parallel for schedule(dynamic, 1) \
    num_threads(nt) if (nt > 1 && n > 1 && n * work_per_item >= kParallelMinWork)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace trinity
