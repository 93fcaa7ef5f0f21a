// `trinity make-data arithmetic`: writes the quickstart's synthetic arithmetic data set:
//   DIR/train.jsonl, DIR/eval.jsonl  taskset rows {"prompt": "12+34=", "answer": "46"}
//   DIR/sft.jsonl                    SFT rows {"prompt", "response"}, a fraction of them correct and
//                                    the rest with the carry forgotten (so RL has something to fix).
// Seeds: train = S, eval = S + 1, sft = S + 2 (reproducible per seed).
// `trinity make-data frozen_lake`: taskset rows {"size": K, "p": P, "seed": N} for frozen_lake_workflow
// (DIR/train.jsonl, DIR/eval.jsonl; sizes uniform in [--min-size, --max-size], p = P(frozen) uniform in
// [0.6, 0.85] as Trinity's get_frozen_lake_data.py; map seeds distinct across both files; every row's map
// is generated once here so a row that cannot make a map within --env-max-steps moves is never written).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/file.h"
#include "core/rng.h"
#include "workflow/arithmetic.h"
#include "workflow/envs/frozen_lake.h"

namespace trinity::cli {

namespace {

int make_frozen_lake(const Argv& argv) {
  const Args a("make-data frozen_lake", argv, {"out", "train", "eval", "seed", "min-size", "max-size", "env-max-steps"});
  const std::string out = a.str("out");
  const int64_t n_train = a.i64("train", 1000), n_eval = a.i64("eval", 100);
  const int64_t lo = a.i64("min-size", 2), hi = a.i64("max-size", 5), max_steps = a.i64("env-max-steps", 8);
  if (n_train < 0 || n_eval < 0) throw ConfigError("make-data", "--train and --eval must be >= 0");
  if (lo < 2 || hi < lo || hi > 32)
    throw ConfigError("make-data", strcat("--min-size/--max-size must satisfy 2 <= min <= max <= 32, got ", lo, " and ", hi));
  if (max_steps < 1) throw ConfigError("make-data", strcat("--env-max-steps must be >= 1, got ", max_steps));
  Rng rng(static_cast<uint64_t>(a.i64("seed", 42)));
  std::set<uint64_t> used;
  auto write = [&](const std::string& name, int64_t n) {
    std::string text;
    int64_t failures = 0;
    for (int64_t i = 0; i < n;) {
      const int64_t size = lo + static_cast<int64_t>(rng.below(static_cast<uint64_t>(hi - lo + 1)));
      const double p = 0.6 + 0.25 * rng.uniform();
      const uint64_t seed = rng.below(1000000000ULL);
      if (!used.insert(seed).second) continue;
      try {
        workflow::FrozenLake::generate_random_map(static_cast<int>(size), p, seed, static_cast<int>(max_steps));
      } catch (const ValueError&) {  // no reachable goal within max_steps for this seed
        if (++failures > 1000 + 100 * n)
          throw ConfigError("make-data", strcat("frozen_lake: cannot make maps of size ", lo, "..", hi,
                                                " whose goal is reachable in --env-max-steps ", max_steps, " moves"));
        continue;
      }
      text += nlohmann::json{{"size", size}, {"p", p}, {"seed", seed}}.dump() + "\n";
      ++i;
    }
    file::write_atomic(file::join(out, name), text);
  };
  file::make_dirs(out);
  write("train.jsonl", n_train);
  write("eval.jsonl", n_eval);
  std::printf("wrote %s/train.jsonl (%lld rows), eval.jsonl (%lld rows): frozen lake maps %lld..%lld\n", out.c_str(),
              static_cast<long long>(n_train), static_cast<long long>(n_eval), static_cast<long long>(lo),
              static_cast<long long>(hi));
  return 0;
}

}  // namespace

int cmd_make_data(const Argv& argv) {
  if (!argv.empty() && argv[0] == "frozen_lake") return make_frozen_lake(Argv(argv.begin() + 1, argv.end()));
  if (argv.empty() || argv[0] != "arithmetic")
    throw ConfigError("make-data", strcat("expected a data set name: 'arithmetic' or 'frozen_lake' (got '",
                                          argv.empty() ? "" : argv[0], "')"));
  const Args a("make-data arithmetic", Argv(argv.begin() + 1, argv.end()),
               {"out", "train", "eval", "sft", "sft-correct", "seed", "digits"});
  const std::string out = a.str("out");
  const int64_t n_train = a.i64("train", 1000), n_eval = a.i64("eval", 100), n_sft = a.i64("sft", 1000);
  const double correct = a.f64("sft-correct", 0.3);
  const auto seed = static_cast<uint64_t>(a.i64("seed", 42));
  const auto digits = static_cast<int>(a.i64("digits", 2));
  if (n_train < 0 || n_eval < 0 || n_sft < 0)
    throw ConfigError("make-data", "--train, --eval and --sft must be >= 0");
  file::make_dirs(out);
  workflow::write_arithmetic_taskset(file::join(out, "train.jsonl"), n_train, seed, digits);
  workflow::write_arithmetic_taskset(file::join(out, "eval.jsonl"), n_eval, seed + 1, digits);
  workflow::write_arithmetic_sft(file::join(out, "sft.jsonl"), n_sft, correct, seed + 2, digits);
  std::printf("wrote %s/train.jsonl (%lld rows), eval.jsonl (%lld), sft.jsonl (%lld, %.0f%% correct)\n",
              out.c_str(), static_cast<long long>(n_train), static_cast<long long>(n_eval),
              static_cast<long long>(n_sft), correct * 100.0);
  return 0;
}

}  // namespace trinity::cli
