// The rollout engine after a LoRA sync, merged vs unmerged adapters (model::LoraPacking), on a bench
// shape with a bf16-held base (as a bf16 checkpoint loads) and rank-r adapters on all seven linears:
// per weight update, seconds of the trainer's snapshot (adapted_copy) and of Engine::update_weights
// (packing), then the generation that follows (P prompts x N samples, T new tokens each, bf16
// panels as rollout_model.dtype bfloat16 gives). Medians over U updates; one JSON line per packing,
// then the unmerged / merged ratios.
// Usage: bench_lora_sync SHAPE [rank] [prompts] [samples] [new_tokens] [updates] [prompt_len]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "../bench_shapes.h"
#include "../bench_util.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "engine/engine.h"
#include "model/lora.h"
#include "tensor/blas.h"

using namespace trinity;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Result {
  double snapshot_s, update_s, generate_s, tokens_per_s;
};

Result run(model::Transformer& actor, model::LoraPacking packing, int64_t prompts, int64_t samples, int64_t new_tokens,
           int updates, int64_t prompt_len, int64_t vocab) {
  engine::EngineOptions o;
  o.weight_format = engine::WeightFormat::kBF16;
  o.lora_packing = packing;
  o.kv_cache_bytes = int64_t{2} << 30;
  engine::Engine e(std::make_shared<const model::Transformer>(model::adapted_copy(actor)), 0, nullptr, o);
  Rng rng(3);
  std::vector<std::vector<int32_t>> ps(static_cast<size_t>(prompts));
  for (auto& p : ps)
    for (int64_t i = 0; i < prompt_len; ++i)
      p.push_back(static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(vocab)));
  std::vector<double> snap_s, upd_s, gen_s, tps;
  for (int u = 0; u <= updates; ++u) {
    if (u > 0) {  // a train step changed the adapters
      for (auto& t : actor.lora_tensors())
        for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] *= 0.999f;
      Timer ts;
      auto snap = std::make_shared<const model::Transformer>(model::adapted_copy(actor));
      snap_s.push_back(ts.seconds());
      Timer tu;
      e.update_weights(std::move(snap), u);
      upd_s.push_back(tu.seconds());
    }
    Timer tg;
    std::vector<engine::RequestHandle> hs;
    for (const auto& p : ps) {
      engine::SamplingParams sp;
      sp.n = samples;
      sp.max_tokens = new_tokens;
      sp.ignore_eos = true;
      sp.seed = static_cast<uint64_t>(u);
      hs.push_back(e.submit(p, sp));
    }
    int64_t toks = 0;
    for (auto& h : hs)
      for (const auto& c : h.wait().completions) toks += static_cast<int64_t>(c.token_ids.size());
    if (u > 0) {  // the first generation warms the engine up
      gen_s.push_back(tg.seconds());
      tps.push_back(static_cast<double>(toks) / gen_s.back());
    }
  }
  return {median(snap_s), median(upd_s), median(gen_s), median(tps)};
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Shape* s = argc > 1 ? bench::find_shape(argv[1]) : nullptr;
  if (!s) {
    std::fprintf(stderr,
                 "usage: bench_lora_sync SHAPE [rank] [prompts] [samples] [new_tokens] [updates] [prompt_len]\n");
    return 2;
  }
  const int64_t rank = argc > 2 ? std::atoll(argv[2]) : 16, prompts = argc > 3 ? std::atoll(argv[3]) : 4,
                samples = argc > 4 ? std::atoll(argv[4]) : 8, new_tokens = argc > 5 ? std::atoll(argv[5]) : 16;
  const int updates = argc > 6 ? std::atoi(argv[6]) : 3;
  const int64_t prompt_len = argc > 7 ? std::atoll(argv[7]) : 25;
  tensor::blas_set_threads(num_threads());
  model::Transformer actor(bench::shape_config(*s), model::HeadKind::kLm, model::WeightStorage::kBF16);
  bench::fast_init(actor);
  model::LoraConfig lc;
  lc.rank = rank;
  lc.alpha = 2.0 * static_cast<double>(rank);
  actor.add_lora(lc, 1);
  Rng r(9);  // B nonzero, as after some training: the adapters change what is sampled
  for (auto& t : actor.lora_tensors())
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(r.normal()) * 0.01f;
  Result res[2];
  const char* names[2] = {"merged", "unmerged"};
  const model::LoraPacking packs[2] = {model::LoraPacking::kMerged, model::LoraPacking::kUnmerged};
  for (int k = 0; k < 2; ++k) {
    res[k] = run(actor, packs[k], prompts, samples, new_tokens, updates, prompt_len, s->vocab);
    std::printf(R"({"shape": "%s", "lora": "%s", "rank": %lld, "threads": %d, "snapshot_s": %.3f, "update_s": %.3f, )"
                R"("generate_s": %.3f, "tokens_per_s": %.1f, "handover_plus_generate_s": %.3f, "peak_rss_gib": %.2f})"
                "\n",
                s->name, names[k], static_cast<long long>(rank), num_threads(), res[k].snapshot_s, res[k].update_s,
                res[k].generate_s, res[k].tokens_per_s, res[k].snapshot_s + res[k].update_s + res[k].generate_s,
                bench::peak_rss_gib());
    std::fflush(stdout);
  }
  const double m = res[0].snapshot_s + res[0].update_s + res[0].generate_s,
               u = res[1].snapshot_s + res[1].update_s + res[1].generate_s;
  std::printf(
      "unmerged vs merged: update %.3f vs %.3f s, decode %.1f vs %.1f tok/s (%.2fx), hand-over + generation %.2f vs "
      "%.2f s (%.2fx faster)\n",
      res[1].update_s, res[0].update_s, res[1].tokens_per_s, res[0].tokens_per_s,
      res[1].tokens_per_s / res[0].tokens_per_s, u, m, m / u);
  return 0;
}
