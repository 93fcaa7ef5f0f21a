// Thread count shared by trinity kernels (OpenMP) and BLAS, and the core budget per role.
#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

namespace trinity {

namespace {
// Read by every kernel thread and set by the launcher while the explorer and trainer threads run:
// atomics (relaxed: the values are hints read at the start of each loop, no ordering).
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

std::atomic<int> g_share[2];  // threads per role while both are busy (0: no budget)
std::atomic<int> g_busy[2];   // RoleBusy objects alive per role

thread_local Role t_role = Role::kNone;
thread_local int t_omp = 0;  // what this thread last gave omp_set_num_threads (0: not yet)

// OpenBLAS's OpenMP build threads a call made outside our loops (gemm's small or serial path) by
// the calling thread's OpenMP setting: keep that equal to the thread's count.
void sync_omp(int n) {
  if (n != t_omp) {
    omp_set_num_threads(n);
    t_omp = n;
  }
}
}  // namespace

int max_threads() {
  return threads_ref().load(std::memory_order_relaxed);
}

int num_threads() {
  int n = max_threads();
  if (t_role == Role::kNone) return n;
  const int me = static_cast<int>(t_role);
  const int share = g_share[me].load(std::memory_order_relaxed);
  if (share > 0 && g_busy[1 - me].load(std::memory_order_relaxed) > 0) n = std::min(n, share);
  sync_omp(n);
  return n;
}

void set_num_threads(int n) {
  n = n > 0 ? n : 1;
  threads_ref().store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
  t_omp = n;
}

void set_thread_role(Role role) {
  t_role = role;
  t_omp = 0;
  sync_omp(num_threads());  // OpenMP's setting is per thread: a new thread starts from the default
}

Role thread_role() {
  return t_role;
}

void set_role_threads(int explorer, int trainer) {
  const bool on = explorer > 0 && trainer > 0;
  g_share[0].store(on ? explorer : 0, std::memory_order_relaxed);
  g_share[1].store(on ? trainer : 0, std::memory_order_relaxed);
}

RoleBusy::RoleBusy(Role role) : role_(role) {
  if (role_ != Role::kNone) g_busy[static_cast<int>(role_)].fetch_add(1, std::memory_order_relaxed);
}

RoleBusy::~RoleBusy() {
  if (role_ != Role::kNone) g_busy[static_cast<int>(role_)].fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace trinity
