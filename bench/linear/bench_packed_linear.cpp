// The engine's decode/prefill linears (tensor::packed_linear over panel-packed fp32 or bf16
// weights) against OpenBLAS sgemm (tensor::gemm: y = x W^T, the product PyTorch's fp32 rollout
// runs) on the Qwen2.5-1.5B shapes, same process, same threads, interleaved repetitions.
// Prints one JSON line per (shape, rows): GFLOP/s of each and the ratio ours / OpenBLAS.
// usage: bench_packed_linear [rows,...] [reps]   (default rows 1,8,32,100; reps 5)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/timer.h"
#include "tensor/blas.h"
#include "tensor/packed_linear.h"

using namespace trinity;

namespace {

struct Linear {
  const char* name;
  int oc, ic;
};

// Qwen2.5-1.5B: hidden 1536, 12/2 heads of 128, intermediate 8960, vocab 151936.
constexpr Linear kShapes[] = {
    {"qkv", 2048, 1536}, {"o", 1536, 1536}, {"gate_up", 17920, 1536}, {"down", 1536, 8960}, {"lm_head", 151936, 1536}};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> rows_list = {1, 8, 32, 100};
  if (argc > 1) {
    rows_list.clear();
    for (const char* p = argv[1]; *p;) {
      rows_list.push_back(std::atoi(p));
      while (*p && *p != ',') ++p;
      if (*p == ',') ++p;
    }
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  std::fprintf(stderr, "threads %d, OpenBLAS core %s\n", num_threads(), tensor::blas_core_name());
  for (const Linear& s : kShapes) {
    std::vector<float> w(static_cast<size_t>(s.oc) * s.ic);
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = static_cast<float>(static_cast<int64_t>(i * 2654435761u % 2001) - 1000) * 2e-5f;
    const tensor::PackedLinear pf(w.data(), s.oc, s.ic, tensor::PackDType::kF32);
    const tensor::PackedLinear pb(w.data(), s.oc, s.ic, tensor::PackDType::kBF16);
    for (int n : rows_list) {
      std::vector<float> x(static_cast<size_t>(n) * s.ic), y(static_cast<size_t>(n) * s.oc);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = static_cast<float>(static_cast<int64_t>(i * 40503u % 201) - 100) * 0.01f;
      std::vector<double> tf, tb, tg;
      for (int r = 0; r < reps + 1; ++r) {  // first repetition warms up, not counted
        Timer t;
        tensor::packed_linear(y.data(), x.data(), pf, nullptr, n, false);
        const double a = t.seconds();
        t.reset();
        tensor::packed_linear(y.data(), x.data(), pb, nullptr, n, false);
        const double b = t.seconds();
        t.reset();
        tensor::gemm(false, true, n, s.oc, s.ic, 1.0f, x.data(), s.ic, w.data(), s.ic, 0.0f, y.data(), s.oc);
        const double g = t.seconds();
        if (r > 0) tf.push_back(a), tb.push_back(b), tg.push_back(g);
      }
      const double flop = 2.0 * n * s.oc * static_cast<double>(s.ic);
      const double f = flop / median(tf) * 1e-9, bf = flop / median(tb) * 1e-9, g = flop / median(tg) * 1e-9;
      std::printf(
          "{\"linear\": \"%s\", \"oc\": %d, \"ic\": %d, \"rows\": %d, \"packed_f32_gflops\": %.1f, "
          "\"packed_bf16_gflops\": %.1f, \"openblas_gflops\": %.1f, \"f32_vs_openblas\": %.2f, "
          "\"bf16_vs_openblas\": %.2f}\n",
          s.name, s.oc, s.ic, n, f, bf, g, f / g, bf / g);
      std::fflush(stdout);
    }
  }
  return 0;
}
