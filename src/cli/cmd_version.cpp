// `trinity version` / `trinity --version`: what this binary is, for bug reports: the version and
// git commit it was built from, compiler, build type and flags, the instruction sets compiled in,
// and at run time the OpenBLAS library actually loaded (its build string, the core it selected for
// this CPU, threading model and threads, and whether OPENBLAS_CORETYPE forced it) and trinity's own
// thread count. Printed on stdout.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/args.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/parallel.h"
#include "tensor/blas.h"

namespace trinity::cli {

namespace {

// Instruction sets this translation unit was compiled with (the whole build uses the same flags).
std::string isa() {
  std::string s;
  auto add = [&](const char* n) { s += s.empty() ? n : std::string(" ") + n; };
#ifdef __AVX2__
  add("avx2");
#endif
#ifdef __FMA__
  add("fma");
#endif
#ifdef __F16C__
  add("f16c");
#endif
#ifdef __AVX512F__
  add("avx512f");
#endif
#ifdef __AVX512BF16__
  add("avx512bf16");
#endif
  return s.empty() ? "baseline x86-64" : s;
}

std::string sanitizers() {
  std::string s;
#ifdef __SANITIZE_ADDRESS__
  s += "address ";
#endif
#ifdef __SANITIZE_THREAD__
  s += "thread ";
#endif
  if (s.empty()) return "none";
  s.pop_back();
  return s;
}

}  // namespace

int cmd_version(const Argv& argv) {
  const Args a("version", argv, {});
  std::printf("trinity %s (commit %s)\n", build::kVersion, build::kCommit);
  std::printf("build:      %s, %s\n", build::kBuildType, build::kCompiler);
  std::printf("flags:      %s\n", build::kFlags);
  std::printf("options:    %s\n", build::kOptions);
  std::printf("isa:        %s\n", isa().c_str());
  std::printf("sanitizers: %s\n", sanitizers().c_str());
  std::printf("blas:       %s\n", tensor::blas_config());
  // A core forced by OPENBLAS_CORETYPE: trinity's own (AVX-512 CPUs, tensor/blas.h) or the user's.
  std::string forced;
  if (const char* ct = std::getenv("OPENBLAS_CORETYPE"))
    forced = strcat("; OPENBLAS_CORETYPE=", ct,
                    std::getenv("TRINITY_SET_CORETYPE") ? " set by trinity" : " from the environment");
  std::printf("blas core:  %s (%s, %d threads%s)\n", tensor::blas_core_name(), tensor::blas_threading(),
              tensor::blas_threads(), forced.c_str());
  std::printf("threads:    %d (TRINITY_THREADS overrides)\n", num_threads());
  // The start-up defaults (tensor/blas.cpp) as this process got them: trinity's unless set before.
  auto env_or = [](const char* k) {
    const char* v = std::getenv(k);
    return v ? std::string(v) : std::string("(unset)");
  };
  std::printf("runtime:    GOMP_SPINCOUNT=%s, GLIBC_TUNABLES=%s\n", env_or("GOMP_SPINCOUNT").c_str(),
              env_or("GLIBC_TUNABLES").c_str());
  return 0;
}

}  // namespace trinity::cli
