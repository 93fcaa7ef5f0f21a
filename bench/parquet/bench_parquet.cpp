// Parquet taskset load throughput: trinity's Taskset::load_rows (the taskset load path: read, decode,
// assemble JSON rows, check required keys) vs DuckDB reading the same file into JSON rows
// (tests/js/bench_parquet.mjs generates the snappy file with DuckDB and times DuckDB), same run.
// Prints file MB/s for both (wall clock; best of 3 for trinity, best of 2 for DuckDB), trinity's
// MB per CPU-second, and the ratio. Usage: bench_parquet [MBYTES=64] [reuse] (the docs use 1000;
// `reuse` keeps the last run's file and DuckDB time, for profiling trinity's side alone).
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "buffer/dataset.h"
#include "core/file.h"
#include "core/parallel.h"

namespace {

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trinity;
  const std::string mb = argc > 1 ? argv[1] : "64";
  const std::string js = std::string(TRINITY_SOURCE_DIR) + "/tests/js";
  if (!file::exists(js + "/node_modules/@duckdb/node-api")) {
    std::fprintf(stderr, "bench_parquet: npm oracles missing; run scripts/setup\n");
    return 1;
  }
  const std::string out = std::string(TRINITY_BINARY_DIR) + "/bench_parquet";
  file::make_dirs(out);
  const std::string cmd = "node '" + js + "/bench_parquet.mjs' '" + out + "' " + mb + " > '" + out + "/js.json'";
  const bool reuse = argc > 2 && std::string(argv[2]) == "reuse" && file::exists(out + "/js.json");
  if (!reuse && std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "bench_parquet: JS side failed: %s\n", cmd.c_str());
    return 1;
  }
  const nlohmann::json base = nlohmann::json::parse(file::read_all(out + "/js.json"));
  const double bytes = base["bytes"].get<double>(), duck_s = base["seconds"].get<double>();
  const int64_t duck_rows = base["rows"].get<int64_t>();
  buffer::FormatConfig fmt;
  fmt.prompt_key = "question";
  fmt.response_key = "answer";
  double best = 1e30, best_cpu = 0;
  size_t rows = 0, json_bytes = 0;
  for (int rep = 0; rep < 3; ++rep) {
    buffer::LoadReport report;
    const double c0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = buffer::Taskset::load_rows(out + "/taskset.parquet", "train", "", fmt, buffer::DatasetKind::kTask,
                                              true, report);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double c = cpu_seconds() - c0;
    rows = r.size();
    json_bytes = 0;
    for (const auto& x : r) json_bytes += x.json.size();
    if (s < best) best = s, best_cpu = c;
  }
  const double mbf = bytes / 1e6;
  std::printf("file %.1f MB, %zu rows (%.1f MB of JSON), %d threads\n", mbf, rows,
              static_cast<double>(json_bytes) / 1e6, num_threads());
  const double jmb = static_cast<double>(json_bytes) / 1e6;
  std::printf("%-28s %10s %12s %14s\n", "reader", "file MB/s", "MB/cpu-s", "JSON out MB/s");
  std::printf("%-28s %10.1f %12.1f %14.1f\n", "trinity Taskset::load_rows", mbf / best, mbf / best_cpu, jmb / best);
  std::printf("%-28s %10.1f %12s %14.1f\n", "DuckDB to_json rows (node)", mbf / duck_s, "-", jmb / duck_s);
  std::printf("ratio (trinity / DuckDB): %.2fx\n", duck_s / best);
  if (static_cast<int64_t>(rows) != duck_rows) {
    std::fprintf(stderr, "bench_parquet: row counts differ (trinity %zu, DuckDB %lld)\n", rows,
                 static_cast<long long>(duck_rows));
    return 1;
  }
  return 0;
}
