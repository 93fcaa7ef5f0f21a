// sgemm wrapper and the process-start environment hook (see blas.h).
#include "tensor/blas.h"

#include <cblas.h>

#include <cstdlib>

#include "core/parallel.h"

extern "C" char* openblas_get_corename(void);

namespace {

// Runs before any shared library's initializer (ELF .preinit_array of the executable), so
// OpenBLAS and libgomp see these variables when they read their environment.
void trinity_preinit(int, char**, char**) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
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

}  // namespace trinity::tensor
