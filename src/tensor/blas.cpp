// sgemm wrapper and the process-start environment hook (see blas.h).
#include "tensor/blas.h"

#include <cblas.h>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/parallel.h"

extern "C" char* openblas_get_corename(void);

namespace {

// Runs first in the process (ELF .preinit_array of the executable), before libc has set up
// `environ`, so it reads and writes the environment only through its envp argument. OpenBLAS reads
// OPENBLAS_CORETYPE in its library constructor, and glibc resets `environ` to the original block
// before that runs, so a setenv here would be lost: when the variable must be added we re-exec the
// same binary once with an extended environment (TRINITY_REEXEC=1 marks the second start).
// Costs ~1 ms at startup; a user's own OPENBLAS_CORETYPE is kept.
// The same start sets GOMP_SPINCOUNT=3000 (about 0.1 ms of spinning before an idle OpenMP worker
// sleeps) unless the user set GOMP_SPINCOUNT or OMP_WAIT_POLICY. libgomp's default spins 300000
// times (~10 ms): when other processes share the cores, spinning workers take the time the working
// ones need, and the small-shape training step took 5x (1 busy process) and 25x (2) its idle time.
// With 3000 it is 2x and 4x, while idle speed (training and decode) is unchanged; PASSIVE (0) costs
// ~10 % on the smallest shapes (bench/train/contention.sh measures all of it).
// And, unless GLIBC_TUNABLES is set, GLIBC_TUNABLES=glibc.malloc.hugetlb=1: malloc advises
// transparent huge pages for its large blocks (std::vector activations, logits, packed copies), as
// alloc_large does for parameters. With 4 KiB pages this VM spent seconds in page faults whenever
// a buffer first grew: a LoRA train step on the 0.5B shape (bench/lora, 32 rows of 41 tokens, three
// steps) took 46.0 s without it and 38.4 s with it, with the same peak RSS.
bool env_has(char** envp, const char* key) {
  const size_t n = strlen(key);
  for (char** e = envp; e && *e; ++e)
    if (strncmp(*e, key, n) == 0 && (*e)[n] == '=') return true;
  return false;
}

void trinity_preinit(int, char** argv, char** envp) {
  if (argv == nullptr || envp == nullptr || env_has(envp, "TRINITY_REEXEC")) return;
  static char coretype[] = "OPENBLAS_CORETYPE=SkylakeX";
  static char coretype_marker[] = "TRINITY_SET_CORETYPE=1";  // for `trinity --version`
  static char spincount[] = "GOMP_SPINCOUNT=3000";
  static char hugetlb[] = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1";
  static char marker[] = "TRINITY_REEXEC=1";
  char* extra[5];
  int n_extra = 0;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && !env_has(envp, "OPENBLAS_CORETYPE")) {
    extra[n_extra++] = coretype;
    extra[n_extra++] = coretype_marker;
  }
  if (!env_has(envp, "GOMP_SPINCOUNT") && !env_has(envp, "OMP_WAIT_POLICY")) extra[n_extra++] = spincount;
  if (!env_has(envp, "GLIBC_TUNABLES")) extra[n_extra++] = hugetlb;
  if (n_extra == 0) return;
  extra[n_extra++] = marker;
  int n_env = 0;
  while (envp[n_env]) ++n_env;
  std::vector<char*> env(envp, envp + n_env);
  env.insert(env.end(), extra, extra + n_extra);
  env.push_back(nullptr);
  execve("/proc/self/exe", argv, env.data());
  // exec failed (no /proc): continue with the defaults the libraries pick.
}

__attribute__((section(".preinit_array"), used)) void (*trinity_preinit_ptr)(int, char**, char**) =
    &trinity_preinit;

}  // namespace

namespace trinity::tensor {

namespace {

void sgemm1(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
            int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// A tile is at least this many rows or columns of C: below it, the repeated packing of the other
// operand (once per tile) and the per-tile call overhead start to show.
constexpr int kMinTile = 64;

}  // namespace

// Large products are split into tiles of C along its longer side, two per thread, handed out
// dynamically; each tile is one single-threaded OpenBLAS call (OpenBLAS runs sequentially inside a
// parallel region). OpenBLAS's own threaded sgemm splits the work statically and its threads wait
// for each other's packed panels in spin-yield loops, so one descheduled thread (another process
// on the core) stalls the whole product; with dynamic tiles the running threads take its share.
// The tiling follows max_threads(), not the threads this call runs on (fewer while another role is
// busy, core/parallel.h), and so does OpenBLAS's own threading of an untiled product (its threaded
// and serial results differ in the last bits), so the role budget never changes a product's bits.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
          int ldb, float beta, float* c, int ldc) {
  const int nt = max_threads();
  const bool split_rows = m >= n;
  const int len = split_rows ? m : n;
  const double flops = 2.0 * m * n * static_cast<double>(k);
  if (nt <= 1 || omp_in_parallel() || len < 2 * kMinTile || flops < 4.0 * kParallelMinWork) {
    // OpenBLAS's OpenMP build threads this call by the calling thread's OpenMP setting (inside our
    // parallel regions it runs serially whatever that is).
    const int run = omp_in_parallel() ? nt : omp_get_max_threads();
    if (run != nt) omp_set_num_threads(nt);
    sgemm1(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (run != nt) omp_set_num_threads(run);
    return;
  }
  // Tiles: 2 per thread when the side is long enough, each a multiple of 16 (the kernels' width).
  // Each tile packs the other operand again: 2 per thread cost 2-4 % of the idle GFLOP/s at the
  // 0.5B-1.5B training shapes, 4 per thread 5-13 %; 1 per thread cannot rebalance.
  int tiles = std::min(2 * nt, len / kMinTile);
  int step = (len + tiles - 1) / tiles;
  step = (step + 15) / 16 * 16;
  tiles = (len + step - 1) / step;
  parallel_for_dynamic(tiles, [&](int64_t t) {
    const int lo = static_cast<int>(t) * step, cnt = std::min(step, len - lo);
    if (split_rows) {
      const float* at = trans_a ? a + lo : a + static_cast<size_t>(lo) * lda;
      sgemm1(trans_a, trans_b, cnt, n, k, alpha, at, lda, b, ldb, beta, c + static_cast<size_t>(lo) * ldc, ldc);
    } else {
      const float* bt = trans_b ? b + static_cast<size_t>(lo) * ldb : b + lo;
      sgemm1(trans_a, trans_b, m, cnt, k, alpha, a, lda, bt, ldb, beta, c + lo, ldc);
    }
  });
}

void gemm_ref(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
              int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        const double av = trans_a ? a[p * lda + i] : a[i * lda + p];
        const double bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        s += av * bv;
      }
      float& out = c[i * ldc + j];
      out = static_cast<float>(alpha * s + (beta == 0.0f ? 0.0 : beta * static_cast<double>(out)));
    }
}

const char* blas_core_name() { return openblas_get_corename(); }

void blas_set_threads(int n) { openblas_set_num_threads(n); }

const char* blas_config() {
  return openblas_get_config();
}

const char* blas_threading() {
  switch (openblas_get_parallel()) {
    case 0:
      return "sequential";
    case 1:
      return "pthreads";
    case 2:
      return "OpenMP";
    default:
      return "unknown";
  }
}

int blas_threads() {
  return openblas_get_num_threads();
}

}  // namespace trinity::tensor
