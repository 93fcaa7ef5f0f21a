// Prefix cache benchmark: a 6-turn agent conversation (each turn's prompt = the previous prompt + the
// previous response + a new user message, as token ids) through the engine with the prefix cache on
// and off, in the same run, alternating, `reps` times each (median reported). Prints one JSON line:
// time to first token of each turn, last-turn TTFT / first-turn TTFT, episode time, and the episode
// speed-up of the cache. Usage: bench_prefix_cache [tiny|small|qwen05] [reps] [system 1024] [user 256]
// [response 32] (token counts: the first prompt is system + user; each turn adds response + user).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../bench_shapes.h"
#include "core/rng.h"
#include "core/timer.h"
#include "engine/engine.h"
#include "model/transformer.h"

using namespace trinity;

namespace {

struct Episode {
  std::vector<double> ttft;  // per turn, seconds
  double total = 0;
  std::vector<int32_t> last_response;
  int64_t hit_tokens = 0;
};

Episode run(engine::Engine& e, int turns, int sys_len, int user_len, int resp_len, uint64_t seed) {
  Rng rng(seed);
  auto tokens = [&](int n) {
    std::vector<int32_t> v;
    for (int i = 0; i < n; ++i)
      v.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(e.config().vocab_size))));
    return v;
  };
  engine::SamplingParams p;
  p.max_tokens = resp_len;
  p.ignore_eos = true;
  p.seed = seed;
  Episode ep;
  const int64_t hits0 = e.stats().prefix_cache_hit_tokens;
  std::vector<int32_t> prompt = tokens(sys_len + user_len);
  Timer total;
  for (int t = 0; t < turns; ++t) {
    Timer tt;
    double first = -1;
    auto h = e.submit(prompt, p, [&](const engine::StreamEvent& ev) {
      if (first < 0 && ev.token >= 0) first = tt.seconds();
    });
    auto r = h.wait();
    ep.ttft.push_back(first);
    ep.last_response = r.completions[0].token_ids;
    prompt.insert(prompt.end(), ep.last_response.begin(), ep.last_response.end());
    auto user = tokens(user_len);
    prompt.insert(prompt.end(), user.begin(), user.end());
  }
  ep.total = total.seconds();
  ep.hit_tokens = e.stats().prefix_cache_hit_tokens - hits0;
  return ep;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "small";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  const int sys_len = argc > 3 ? std::atoi(argv[3]) : 1024, user_len = argc > 4 ? std::atoi(argv[4]) : 256;
  const int resp_len = argc > 5 ? std::atoi(argv[5]) : 32, turns = 6;
  const bench::Shape* s = bench::find_shape(which.c_str());
  if (!s || reps < 1) {
    std::fprintf(stderr, "usage: bench_prefix_cache tiny|small|qwen05 [reps] [system] [user] [response]\n");
    return 2;
  }
  auto m = std::make_shared<model::Transformer>(bench::shape_config(*s));
  m->init_random(1);
  engine::EngineOptions o;
  o.kv_cache_bytes = int64_t{1} << 30;
  o.prefix_cache = true;
  engine::Engine on(m, 0, nullptr, o);
  o.prefix_cache = false;
  engine::Engine off(m, 0, nullptr, o);
  {  // warm-up (touches weights, KV pools, thread pools)
    engine::SamplingParams w;
    w.max_tokens = 2;
    on.generate(std::vector<int32_t>(64, 1), w);
    off.generate(std::vector<int32_t>(64, 1), w);
  }
  std::vector<double> on_first, on_last, on_total, off_first, off_last, off_total;
  bool same = true;
  int64_t hits = 0;
  for (int r = 0; r < reps; ++r) {
    // A fresh conversation per repetition (different seed): nothing cached from an earlier one.
    const uint64_t seed = 100 + static_cast<uint64_t>(r);
    const Episode a = run(on, turns, sys_len, user_len, resp_len, seed);
    const Episode b = run(off, turns, sys_len, user_len, resp_len, seed);
    same = same && a.last_response == b.last_response;
    hits = a.hit_tokens;
    on_first.push_back(a.ttft.front());
    on_last.push_back(a.ttft.back());
    on_total.push_back(a.total);
    off_first.push_back(b.ttft.front());
    off_last.push_back(b.ttft.back());
    off_total.push_back(b.total);
  }
  const int last_prompt = sys_len + user_len + (turns - 1) * (resp_len + user_len);
  std::printf(
      "{\"shape\": \"%s\", \"turns\": %d, \"first_prompt\": %d, \"last_prompt\": %d, \"response\": %d, \"reps\": %d, "
      "\"on\": {\"ttft_first_ms\": %.1f, \"ttft_last_ms\": %.1f, \"episode_s\": %.3f, \"hit_tokens\": %lld}, "
      "\"off\": {\"ttft_first_ms\": %.1f, \"ttft_last_ms\": %.1f, \"episode_s\": %.3f}, "
      "\"on_last_over_first_ttft\": %.2f, \"off_last_over_first_ttft\": %.2f, \"episode_speedup\": %.2f, "
      "\"same_tokens\": %s}\n",
      which.c_str(), turns, sys_len + user_len, last_prompt, resp_len, reps, 1e3 * median(on_first),
      1e3 * median(on_last), median(on_total), static_cast<long long>(hits), 1e3 * median(off_first),
      1e3 * median(off_last), median(off_total), median(on_last) / median(on_first),
      median(off_last) / median(off_first), median(off_total) / median(on_total), same ? "true" : "false");
  return same ? 0 : 1;
}
