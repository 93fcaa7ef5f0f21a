// Training-step throughput of trinity's engine: forward + backward + grad clipping + AdamW on a
// random-init model of a named shape, batch B x T of random tokens. Prints one JSON line with
// tokens/s, step seconds, peak RSS and the sgemm GFLOP/s this build gets (2048^2, all threads).
// Driven by bench/train/run.sh, which runs the PyTorch baseline in the same run.
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "model/transformer.h"
#include "../bench_shapes.h"
#include "tensor/blas.h"
#include "trainer/optimizer.h"

using namespace trinity;

namespace {

double sgemm_gflops() {
  const int n = 2048;
  std::vector<float> a(static_cast<size_t>(n) * n, 1.0f), b(a.size(), 0.5f), c(a.size());
  tensor::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  Timer t;
  const int reps = 5;
  for (int i = 0; i < reps; ++i)
    tensor::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  return 2.0 * n * n * static_cast<double>(n) * reps / t.seconds() / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = argc > 1 ? argv[1] : "tiny";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 5;
  const bench::Shape* s = bench::find_shape(which.c_str());
  if (!s) {
    std::fprintf(stderr, "usage: bench_train tiny|small|qwen05 [steps]\n");
    return 2;
  }
  const model::ModelConfig cfg = bench::shape_config(*s);
  model::Transformer m(cfg);
  m.init_random(1);
  Rng rng(7);
  std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(s->batch));
  for (auto& q : seqs)
    for (int64_t i = 0; i < s->seq; ++i) q.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(s->vocab))));
  const auto batch = model::Batch::next_token(seqs);
  trainer::AdamW opt(m.num_params(), trainer::AdamWConfig{1e-5, 0.9, 0.999, 1e-8, 0.01});
  std::vector<float> lp, ent;
  auto step = [&] {
    m.zero_grad();
    m.forward(batch, lp, ent);
    m.backward(std::vector<float>(lp.size(), -1.0f / static_cast<float>(lp.size())), {});
    trainer::clip_grad_norm(m.grads(), m.num_params(), 1.0);
    opt.step(m.params(), m.grads(), 1e-5);
  };
  step();  // warm-up: allocates the arena and touches every page
  Timer t;
  for (int i = 0; i < steps; ++i) step();
  const double sec = t.seconds() / steps;
  const double tokens = static_cast<double>(s->batch * s->seq);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double gflops = sgemm_gflops();
  std::printf("{\"impl\": \"trinity\", \"shape\": \"%s\", \"params\": %lld, \"tokens_per_s\": %.1f, "
              "\"step_s\": %.3f, \"peak_rss_gib\": %.2f, \"sgemm_gflops\": %.1f, \"blas_core\": \"%s\", "
              "\"threads\": %d}\n",
              s->name, static_cast<long long>(cfg.num_params()), tokens / sec, sec,
              static_cast<double>(ru.ru_maxrss) / (1024.0 * 1024.0), gflops,
              tensor::blas_core_name(), num_threads());
  return 0;
}
