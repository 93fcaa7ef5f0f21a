// sgemm wrapper and the process-start environment hook (see blas.h).
#include "tensor/blas.h"

#include <cblas.h>

#include <unistd.h>

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
// Costs ~1 ms at startup; a user's own OPENBLAS_CORETYPE is kept. OMP_WAIT_POLICY is left alone:
// libgomp's default (spin briefly, then sleep; throttled when oversubscribed) measured fastest with
// the OpenMP build of OpenBLAS, and PASSIVE cost 30-40 % on small GEMM-heavy steps.
bool env_has(char** envp, const char* key) {
  const size_t n = strlen(key);
  for (char** e = envp; e && *e; ++e)
    if (strncmp(*e, key, n) == 0 && (*e)[n] == '=') return true;
  return false;
}

void trinity_preinit(int, char** argv, char** envp) {
  if (argv == nullptr || envp == nullptr || env_has(envp, "TRINITY_REEXEC")) return;
  static char coretype[] = "OPENBLAS_CORETYPE=SkylakeX";
  static char marker[] = "TRINITY_REEXEC=1";
  char* extra[2];
  int n_extra = 0;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && !env_has(envp, "OPENBLAS_CORETYPE"))
    extra[n_extra++] = coretype;
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

void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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
