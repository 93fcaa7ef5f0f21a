// Data-parallel train-step throughput: PolicyTrainer::train_step (GRPO loss, explorer-side
// advantages) on a random-init model of a bench shape and a batch of B x T random tokens, run as one
// process or under mpirun (then every rank takes its slice of the rows and gradients are all-reduced
// through dist::world(), exactly the path `mpirun trinity run` takes). Rank 0 prints one JSON line:
// tokens/s of the whole batch, seconds per step and per step inside collectives.
// Driven by bench/dist/run.sh (1 rank x 1 thread, 1 rank x 2 threads, 2 ranks x 1 thread, and the
// PyTorch DDP baseline on the same shape).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../bench_shapes.h"
#include "algorithm/preset.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "dist/comm.h"
#include "tensor/blas.h"
#include "trainer/trainer.h"

using namespace trinity;

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "small";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 3;
  const bench::Shape* s = bench::find_shape(which.c_str());
  if (!s) {
    std::fprintf(stderr, "usage: bench_dist tiny|small|qwen05 [steps]\n");
    return 2;
  }
  dist::Comm& comm = dist::world();
  tensor::blas_set_threads(num_threads());
  model::Transformer m(bench::shape_config(*s));
  m.init_random(1);  // the same weights on every rank
  algo::AlgorithmSpec spec = algo::algorithm_spec_from_json(R"({"algorithm_type": "grpo"})");
  trainer::TrainerOptions o;
  o.micro_batch_size = 2;  // 1 rank: B/2 micro-batches; n ranks: B/(2n) each
  o.optim.lr = 1e-5;
  if (comm.size() > 1) o.comm = &comm;
  trainer::PolicyTrainer tr(std::move(m), spec, o);
  Rng rng(7);
  const int64_t prompt = s->seq / 4, resp = s->seq - prompt;
  std::vector<buffer::Experience> batch;
  for (int64_t b = 0; b < s->batch; ++b) {
    buffer::Experience e;
    e.eid.task = b / 4, e.eid.run = b % 4;
    e.prompt_length = prompt;
    for (int64_t i = 0; i < s->seq; ++i)
      e.tokens.push_back(static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(s->vocab)));
    e.logprobs.assign(static_cast<size_t>(resp), -2.0f);
    e.action_mask.assign(static_cast<size_t>(resp), 1);
    e.advantages.assign(static_cast<size_t>(resp), b % 2 ? 1.0f : -1.0f);
    e.reward = b % 2;
    batch.push_back(std::move(e));
  }
  tr.train_step(batch, 1);  // warm-up
  const double c0 = comm.comm_seconds();
  Timer t;
  for (int i = 0; i < steps; ++i) tr.train_step(batch, i + 2);
  const double sec = t.seconds() / steps, comm_s = (comm.comm_seconds() - c0) / steps;
  if (comm.rank() == 0)
    std::printf(R"({"impl": "trinity", "shape": "%s", "ranks": %d, "threads": %d, "params": %lld, )"
                R"("tokens_per_s": %.1f, "step_s": %.3f, "comm_s": %.4f, "grad_mib": %.1f})"
                "\n",
                s->name, comm.size(), num_threads(), static_cast<long long>(tr.actor().num_params()),
                static_cast<double>(s->batch * s->seq) / sec, sec, comm_s,
                static_cast<double>(tr.actor().num_params()) * 4 / (1 << 20));
  dist::end_job(0);
  return 0;
}
