// Generation throughput of trinity's engine: B concurrent requests of a 64-token random prompt,
// 128 sampled tokens each (temperature 1, EOS ignored), through the continuous-batching engine.
// Prints one JSON line: aggregate tokens/s, mean time to first token, KV bytes per sequence.
// Driven by bench/generate/run.sh, which runs the PyTorch baseline in the same run.
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "engine/engine.h"
#include "model/transformer.h"
#include "../bench_shapes.h"

using namespace trinity;

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "tiny";
  const int batch = argc > 2 ? std::atoi(argv[2]) : 1;
  const int prompt_len = 64, new_tokens = argc > 3 ? std::atoi(argv[3]) : 128;
  const std::string weights = argc > 4 ? argv[4] : "f32";  // f32 (packed fp32 copy), bf16, master
  const bench::Shape* s = bench::find_shape(which.c_str());
  if (!s) {
    std::fprintf(stderr, "usage: bench_generate tiny|small|qwen05|qwen15 [batch] [new_tokens] [f32|bf16|master]\n");
    return 2;
  }
  const model::ModelConfig cfg = bench::shape_config(*s);
  auto m = std::make_shared<model::Transformer>(cfg);
  m->init_random(1);
  engine::EngineOptions o;
  o.kv_cache_bytes = int64_t{2} << 30;
  if (weights == "bf16") o.weight_format = engine::WeightFormat::kBF16;
  else if (weights == "master") o.weight_format = engine::WeightFormat::kF32;
  else if (weights != "f32") {
    std::fprintf(stderr, "weights: expected f32, bf16 or master, got %s\n", weights.c_str());
    return 2;
  }
  engine::Engine e(m, 0, nullptr, o);
  Rng rng(3);
  engine::SamplingParams p;
  p.max_tokens = new_tokens;
  p.ignore_eos = true;
  // Warm-up request (touches weights and the KV pool).
  {
    engine::SamplingParams w = p;
    w.max_tokens = 2;
    e.generate(std::vector<int32_t>(8, 1), w);
  }
  std::mutex mu;
  std::vector<double> ttft(static_cast<size_t>(batch), -1.0);
  Timer t;
  std::vector<engine::RequestHandle> hs;
  for (int b = 0; b < batch; ++b) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < prompt_len; ++i) prompt.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(s->vocab))));
    hs.push_back(e.submit(prompt, p, [&, b](const engine::StreamEvent& ev) {
      std::lock_guard<std::mutex> l(mu);
      if (ev.token >= 0 && ttft[static_cast<size_t>(b)] < 0) ttft[static_cast<size_t>(b)] = t.seconds();
    }));
  }
  int64_t tokens = 0;
  for (auto& h : hs) tokens += static_cast<int64_t>(h.wait().completions[0].token_ids.size());
  const double sec = t.seconds();
  double ttft_mean = 0;
  for (double x : ttft) ttft_mean += x;
  ttft_mean /= batch;
  const auto kv_bytes = static_cast<double>(2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 4) *
                        (prompt_len + new_tokens);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::printf("{\"impl\": \"trinity\", \"weights\": \"%s\", \"shape\": \"%s\", \"batch\": %d, \"tokens_per_s\": %.1f, "
              "\"seconds\": %.3f, \"ttft_s\": %.3f, \"kv_mib_per_seq\": %.2f, \"peak_rss_gib\": %.2f}\n",
              weights.c_str(), s->name, batch, static_cast<double>(tokens) / sec, sec, ttft_mean, kv_bytes / (1 << 20),
              static_cast<double>(ru.ru_maxrss) / (1024.0 * 1024.0));
  return 0;
}
