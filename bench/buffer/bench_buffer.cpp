// Buffer throughput benchmark: write and read experiences/s with 1k-token experiences (tokens [1024],
// 256 prompt + 768 response with logprobs and action mask) for the queue, sqlite (one transaction per
// write batch) and JSONL storages, plus the baseline a naive implementation would be: sqlite with one
// transaction per experience; with a PostgreSQL URL the same for postgresql (paired with sqlite in one
// run); and 1 vs 4 processes writing, then reading, one buffer at once (sqlite, postgresql). Prints
// markdown tables (docs/benchmarks.md, Buffer section).
// usage: bench_buffer [n_experiences=20000] [batch=256] [dir=/tmp] [only=substring of a row name, - = all]
//                     [postgresql://user@host:port/db  (or TRINITY_BENCH_PG_URL)]
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "buffer/pg_storage.h"
#include "buffer/storage.h"
#include "core/error.h"
#include "core/timer.h"

using namespace trinity;
using namespace trinity::buffer;

namespace {

Experience make(int64_t i) {
  Experience e;
  e.eid.batch = std::to_string(i / 64);
  e.eid.task = i % 64;
  e.eid.suffix = random_suffix();
  e.prompt_length = 256;
  e.tokens.resize(1024);
  for (size_t t = 0; t < e.tokens.size(); ++t) e.tokens[t] = static_cast<int32_t>((i * 7919 + static_cast<int64_t>(t) * 31) % 151000);
  e.logprobs.resize(768);
  for (size_t t = 0; t < e.logprobs.size(); ++t) e.logprobs[t] = -0.001f * static_cast<float>(t % 997);
  e.action_mask.assign(768, 1);
  e.reward = static_cast<double>(i % 2);
  e.model_version = i / 1000;
  e.info = "{\"task_index\":{\"index\":" + std::to_string(i) + ",\"taskset_id\":0}}";
  e.metrics["response_length"] = 768;
  return e;
}

struct Row {
  std::string name;
  double write_per_s, read_per_s;
  double bytes_per_exp;
  double write_per_cpu_s = 0, read_per_cpu_s = 0;  // per second of process CPU time (user + sys)
};

// Process CPU seconds: on a shared machine wall-clock rates also measure the neighbours' load.
double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string g_only;

Row bench(const std::string& name, StorageConfig cfg, const std::vector<Experience>& data, size_t batch,
          bool per_experience_tx = false) {
  if (!g_only.empty() && name.find(g_only) == std::string::npos) return {name, 0, 0, 0};
  auto s = open_storage(cfg);
  Timer t;
  double c0 = cpu_seconds();
  if (per_experience_tx) {
    for (const auto& e : data) s->write({e});
  } else {
    for (size_t i = 0; i < data.size(); i += batch)
      s->write(std::vector<Experience>(data.begin() + static_cast<long>(i),
                                       data.begin() + static_cast<long>(std::min(data.size(), i + batch))));
  }
  const double tw = t.seconds();
  const double cw = cpu_seconds() - c0;
  t.reset();
  c0 = cpu_seconds();
  size_t got = 0;
  ReadRequest r;
  r.batch_size = batch;
  r.timeout_s = 0.0;
  r.allow_partial = true;
  while (got < data.size()) {
    ReadResult res = s->read(r);
    if (res.batch.empty()) break;
    got += res.batch.size();
    s->ack(res.lease);
  }
  const double tr = t.seconds();
  const double cr = cpu_seconds() - c0;
  if (got != data.size()) std::fprintf(stderr, "%s: read %zu of %zu\n", name.c_str(), got, data.size());
  double bytes = 0;
  if (!cfg.path.empty() && !is_postgres_url(cfg.path)) {
    const std::string p = sqlite_path_from_url(cfg.path);
    std::error_code ec;
    bytes = static_cast<double>(std::filesystem::file_size(p, ec));
    const auto wal = std::filesystem::file_size(p + "-wal", ec);
    if (!ec) bytes += static_cast<double>(wal);
    bytes /= static_cast<double>(data.size());
  }
  const auto nd = static_cast<double>(data.size());
  return {name, nd / tw, static_cast<double>(got) / tr, bytes, nd / cw, static_cast<double>(got) / cr};
}

// `procs` processes write disjoint slices of `data` at once, then `procs` processes read and ack until
// the storage is empty: aggregate experiences/s of each phase (wall clock) and the total read.
struct ProcRow {
  std::string name;
  int procs;
  double write_per_s, read_per_s;
  int64_t read_total;
};

ProcRow bench_procs(const std::string& name, StorageConfig cfg, const std::vector<Experience>& data, size_t batch,
                    int procs) {
  if (!g_only.empty() && name.find(g_only) == std::string::npos) return {name, procs, 0, 0, 0};
  { auto init = open_storage(cfg); }  // tables exist before the race
  auto run = [&](auto&& body) {
    std::vector<pid_t> kids;
    int fds[2];
    if (::pipe(fds) != 0) std::exit(1);
    for (int p = 0; p < procs; ++p) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(fds[0]);
        int64_t n = 0;
        try {
          n = body(p);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s: process %d: %s\n", name.c_str(), p, e.what());
        }
        if (::write(fds[1], &n, sizeof n) != sizeof n) ::_exit(2);
        ::_exit(0);
      }
      kids.push_back(pid);
    }
    ::close(fds[1]);
    int64_t total = 0, n = 0;
    while (::read(fds[0], &n, sizeof n) == sizeof n) total += n;
    ::close(fds[0]);
    for (pid_t k : kids) ::waitpid(k, nullptr, 0);
    return total;
  };
  Timer t;
  run([&](int p) {
    auto s = open_storage(cfg);
    const size_t lo = data.size() * static_cast<size_t>(p) / static_cast<size_t>(procs);
    const size_t hi = data.size() * static_cast<size_t>(p + 1) / static_cast<size_t>(procs);
    for (size_t i = lo; i < hi; i += batch)
      s->write(std::vector<Experience>(data.begin() + static_cast<long>(i),
                                       data.begin() + static_cast<long>(std::min(hi, i + batch))));
    return static_cast<int64_t>(hi - lo);
  });
  const double tw = t.seconds();
  t.reset();
  const int64_t got = run([&](int p) {
    StorageConfig c = cfg;
    c.reader_id = trinity::strcat("reader-", p);
    auto s = open_storage(c);
    ReadRequest r;
    r.batch_size = batch;
    r.timeout_s = 0.0;
    r.allow_partial = true;
    int64_t n = 0;
    for (;;) {
      ReadResult res = s->read(r);
      if (res.batch.empty()) break;
      n += static_cast<int64_t>(res.batch.size());
      s->ack(res.lease);
    }
    return n;
  });
  const double tr = t.seconds();
  if (got != static_cast<int64_t>(data.size()))
    std::fprintf(stderr, "%s: read %lld of %zu\n", name.c_str(), static_cast<long long>(got), data.size());
  const auto nd = static_cast<double>(data.size());
  return {name, procs, nd / tw, static_cast<double>(got) / tr, got};
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? static_cast<size_t>(std::atol(argv[1])) : 20000;
  const size_t batch = argc > 2 ? static_cast<size_t>(std::atol(argv[2])) : 256;
  const std::string dir = std::string(argc > 3 ? argv[3] : "/tmp") + "/trinity_bench_buffer_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  if (argc > 4) g_only = argv[4];
  // A PostgreSQL server for the postgresql rows: argv[5] or TRINITY_BENCH_PG_URL (rows left out without).
  const char* pg_env = std::getenv("TRINITY_BENCH_PG_URL");
  const std::string pg_url = argc > 5 ? argv[5] : (pg_env ? pg_env : "");
  if (g_only == "-") g_only.clear();
  std::vector<Experience> data;
  data.reserve(n);
  for (size_t i = 0; i < n; ++i) data.push_back(make(static_cast<int64_t>(i)));

  std::vector<Row> rows;
  StorageConfig q;
  q.storage_type = "queue";
  q.capacity = static_cast<int64_t>(n);
  rows.push_back(bench("queue (in-process)", q, data, batch));
  StorageConfig s;
  s.storage_type = "sql";
  s.path = "sqlite:///" + dir + "/b.db";
  rows.push_back(bench("sqlite, 1 transaction per batch", s, data, batch));
  StorageConfig rp = s;
  rp.path = "sqlite:///" + dir + "/replay.db";
  rp.replay_buffer.enable = true;
  rows.push_back(bench("sqlite + replay (linear_decay)", rp, data, batch));
  StorageConfig f;
  f.storage_type = "file";
  f.path = dir + "/b.jsonl";
  rows.push_back(bench("JSONL file", f, data, batch));
  StorageConfig base = s;
  base.path = "sqlite:///" + dir + "/baseline.db";
  const size_t nb = std::min<size_t>(n, 2000);
  rows.push_back(bench("baseline: sqlite, 1 transaction per experience", base,
                       std::vector<Experience>(data.begin(), data.begin() + static_cast<long>(nb)), batch, true));

  const std::string tag = std::to_string(::getpid());
  if (!pg_url.empty()) {
    StorageConfig pg = s;
    pg.path = pg_url;
    pg.name = "bench_" + tag;
    rows.push_back(bench("postgresql, 1 transaction per batch", pg, data, batch));
  }
  std::vector<ProcRow> prow;
  for (int procs : {1, 4}) {
    StorageConfig sp = s;
    sp.path = trinity::strcat("sqlite:///", dir, "/procs", procs, ".db");
    sp.max_retry_times = 100, sp.max_retry_interval = 0.05;
    prow.push_back(bench_procs("sqlite", sp, data, batch, procs));
    if (!pg_url.empty()) {
      StorageConfig pp = s;
      pp.path = pg_url;
      pp.name = trinity::strcat("bench_", tag, "_procs", procs);
      prow.push_back(bench_procs("postgresql", pp, data, batch, procs));
    }
  }

  std::printf("experiences: %zu x 1024 tokens (768 response), write/read batch %zu, dir %s\n\n", n, batch, dir.c_str());
  std::printf("| storage | write exp/s | read+ack exp/s | write exp/CPU-s | read+ack exp/CPU-s | bytes/exp on disk |\n"
              "|---|---:|---:|---:|---:|---:|\n");
  for (const auto& r : rows) {
    if (r.write_per_s == 0) continue;
    std::printf("| %s | %.0f | %.0f | %.0f | %.0f | %s |\n", r.name.c_str(), r.write_per_s, r.read_per_s,
                r.write_per_cpu_s, r.read_per_cpu_s,
                r.bytes_per_exp > 0 ? std::to_string(static_cast<long long>(r.bytes_per_exp)).c_str() : "-");
  }
  std::printf(
      "\n| storage | processes | write exp/s (all processes) | read+ack exp/s (all processes) |\n"
      "|---|---:|---:|---:|\n");
  for (const auto& r : prow)
    if (r.write_per_s > 0)
      std::printf("| %s | %d | %.0f | %.0f |\n", r.name.c_str(), r.procs, r.write_per_s, r.read_per_s);
  if (rows[4].write_per_s > 0)
    std::printf("\nsqlite batched vs per-experience transactions (write): %.1fx\n", rows[1].write_per_s / rows[4].write_per_s);
  std::filesystem::remove_all(dir);
  return 0;
}
