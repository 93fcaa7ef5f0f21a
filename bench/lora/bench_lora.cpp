// Memory and time of one GRPO train step (PolicyTrainer::train_step: reference logprobs of the base,
// then the actor update with the clipped loss and a k2 KL loss) on a random model of a bench shape,
// with LoRA (rank r on all linears, base frozen) or full fine-tuning, with or without activation
// checkpointing. Prints one JSON line: peak RSS of the process (getrusage), seconds per step, the
// reference / update split, trainable parameters. Driven by bench/lora/run.sh next to the PyTorch
// baseline (torch_lora_step.py) on the same shape and batch.
// Usage: bench_lora SHAPE lora|full CKPT(0|1) [batch] [seq] [steps] [rank] [micro_tokens] [f32|bf16]
// (the last: how the frozen base's layer weights are held with LoRA; bf16 = a bf16 checkpoint's
// WeightStorage::kBF16).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../bench_shapes.h"
#include "../bench_util.h"
#include "algorithm/preset.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "tensor/blas.h"
#include "trainer/trainer.h"

using namespace trinity;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_lora SHAPE lora|full CKPT [batch] [seq] [steps] [rank] [micro_tokens]\n");
    return 2;
  }
  const bench::Shape* s = bench::find_shape(argv[1]);
  const bool lora = std::strcmp(argv[2], "lora") == 0;
  const bool ckpt = std::atoi(argv[3]) != 0;
  const int64_t batch = argc > 4 ? std::atoll(argv[4]) : 8, seq = argc > 5 ? std::atoll(argv[5]) : 256;
  const int steps = argc > 6 ? std::atoi(argv[6]) : 1;
  const int64_t rank = argc > 7 ? std::atoll(argv[7]) : 16;
  const int64_t micro_tokens = argc > 8 ? std::atoll(argv[8]) : 1024;
  const bool bf16_base = argc > 9 && std::strcmp(argv[9], "bf16") == 0;
  if (bf16_base && !lora) {
    std::fprintf(stderr, "a bf16-held base is frozen: use it with lora\n");
    return 2;
  }
  if (!s) {
    std::fprintf(stderr, "unknown shape %s\n", argv[1]);
    return 2;
  }
  tensor::blas_set_threads(num_threads());
  Timer setup;
  model::Transformer m(bench::shape_config(*s), model::HeadKind::kLm,
                       bf16_base ? model::WeightStorage::kBF16 : model::WeightStorage::kF32);
  bench::fast_init(m);
  if (lora) {
    model::LoraConfig lc;
    lc.rank = rank;
    lc.alpha = 2.0 * static_cast<double>(rank);
    m.add_lora(lc, 1);
  }
  m.set_gradient_checkpointing(ckpt);
  algo::AlgorithmSpec spec = algo::algorithm_spec_from_json(R"({"algorithm_type": "grpo"})");
  trainer::TrainerOptions o;
  o.max_token_len_per_gpu = micro_tokens;
  o.optim.lr = 1e-5;
  trainer::PolicyTrainer tr(std::move(m), spec, o);
  const double setup_s = setup.seconds();
  Rng rng(7);
  const int64_t prompt = seq / 4, resp = seq - prompt;
  std::vector<buffer::Experience> exps;
  for (int64_t b = 0; b < batch; ++b) {
    buffer::Experience e;
    e.eid.task = b / 4, e.eid.run = b % 4;
    e.prompt_length = prompt;
    for (int64_t i = 0; i < seq; ++i)
      e.tokens.push_back(static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(s->vocab)));
    e.logprobs.assign(static_cast<size_t>(resp), -2.0f);
    e.action_mask.assign(static_cast<size_t>(resp), 1);
    e.advantages.assign(static_cast<size_t>(resp), b % 2 ? 1.0f : -1.0f);
    e.reward = static_cast<double>(b % 2);
    exps.push_back(std::move(e));
  }
  double ref_s = 0, upd_s = 0, total = 0;
  for (int i = 0; i < steps; ++i) {
    const auto met = tr.train_step(exps, i + 1);
    ref_s += met.count("time/ref") ? met.at("time/ref") : 0.0;
    upd_s += met.at("time/update_actor");
    total += met.at("time/train_step");
  }
  std::printf(R"({"impl": "trinity", "shape": "%s", "mode": "%s", "base": "%s", "checkpointing": %s, "threads": %d, )"
              R"("params": %lld, "trainable": %lld, "tokens": %lld, "step_s": %.2f, "ref_s": %.2f, "update_s": %.2f, )"
              R"("setup_s": %.1f, "activation_gib": %.3f, "peak_rss_gib": %.2f})"
              "\n",
              s->name, lora ? "lora" : "full", bf16_base ? "bf16" : "f32", ckpt ? "true" : "false", num_threads(),
              static_cast<long long>(tr.actor().num_params() + tr.actor().num_held()),
              static_cast<long long>(tr.actor().num_trainable()), static_cast<long long>(batch * seq), total / steps,
              ref_s / steps, upd_s / steps, setup_s, static_cast<double>(tr.actor().activation_bytes()) / (1 << 30),
              bench::peak_rss_gib());
  return 0;
}
