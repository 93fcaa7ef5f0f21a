// Row-major sgemm over OpenBLAS (the OpenMP build when installed: one thread pool with trinity's
// kernels). Before any library loads, an ELF preinit hook sets OPENBLAS_CORETYPE=SkylakeX on
// AVX-512 CPUs (Debian's OpenBLAS 0.3.21 otherwise picks slow generic kernels) and a short OpenMP
// spin (GOMP_SPINCOUNT=3000: idle workers sleep soon, which keeps other processes on the same cores
// from stalling us), re-executing the binary once so the libraries see them; values the user set
// are kept. Large products run as dynamically scheduled single-threaded tiles (see gemm).
#pragma once

namespace trinity::tensor {

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C. Row-major; lda/ldb/ldc are row strides.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

// Naive double-accumulating reference of gemm (the test oracle).
void gemm_ref(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
              int lda, const float* b, int ldb, float beta, float* c, int ldc);

// The OpenBLAS core the library selected ("SkylakeX", "Haswell", ...), for logs and benchmarks.
const char* blas_core_name();
void blas_set_threads(int n);
// OpenBLAS's build string ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64"), its
// threading model ("OpenMP", "pthreads", "sequential") and thread count, for `trinity --version`.
const char* blas_config();
const char* blas_threading();
int blas_threads();

}  // namespace trinity::tensor
