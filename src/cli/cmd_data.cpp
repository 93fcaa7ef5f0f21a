// `trinity make-data arithmetic`: writes the quickstart's synthetic arithmetic data set:
//   DIR/train.jsonl, DIR/eval.jsonl  taskset rows {"prompt": "12+34=", "answer": "46"}
//   DIR/sft.jsonl                    SFT rows {"prompt", "response"}, a fraction of them correct and
//                                    the rest with the carry forgotten (so RL has something to fix).
// Seeds: train = S, eval = S + 1, sft = S + 2 (reproducible per seed).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/file.h"
#include "workflow/arithmetic.h"

namespace trinity::cli {

int cmd_make_data(const Argv& argv) {
  if (argv.empty() || argv[0] != "arithmetic")
    throw ConfigError("make-data", strcat("expected a data set name: 'arithmetic' (got '",
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
