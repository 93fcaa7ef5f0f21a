// Studio at scale (docs/benchmarks.md, "Studio"). Builds a run dir with a metrics.jsonl of N lines
// written by the real Monitor (trainer lines with 36 metrics + explorer lines with 24, alternating)
// and an experience buffer of M rows, starts the studio in process, and times what the dashboard and
// the Rollouts page ask for:
//   chart cold   GET /api/metrics for 8 series, 2000 points each, on a fresh studio (index + extract)
//   names        GET /api/metrics/keys after it (every line's keys scanned once)
//   chart live   the same request after 100 more lines were appended (what a 2 s poll costs)
//   baselines    every line parsed with nlohmann::json in process, and with Python's json module
//                (/usr/bin/python3, what a dashboard script does), collecting the same 8 series
//   rollouts     GET /api/rollouts?offset=... near the end of the buffer, with a reward filter + order
// usage: bench_studio [lines=1000000] [experiences=200000] [dir=/tmp/trinity-bench-studio]
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "buffer/storage.h"
#include "core/timer.h"
#include "env/http_client.h"
#include "monitor/monitor.h"
#include "studio/studio.h"

using namespace trinity;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kSeries = {"trainer:actor/pg_loss",          "trainer:actor/entropy",
                                          "trainer:actor/grad_norm",        "trainer:response_length/mean",
                                          "trainer:perf/throughput",        "explorer:rollout/reward/mean",
                                          "explorer:rollout/accuracy/mean", "explorer:time/explore_step"};

void write_metrics(const std::string& job, int64_t lines, int64_t from_step) {
  monitor::Monitor trainer(job, "trainer", "jsonl"), explorer(job, "explorer", "jsonl");
  for (int64_t i = 0; i < lines; ++i) {
    const int64_t step = from_step + i / 2;
    const double x = static_cast<double>(step);
    std::map<std::string, double> m;
    if (i % 2 == 0) {
      for (const char* k : {"actor/pg_loss",
                            "actor/entropy",
                            "actor/grad_norm",
                            "actor/lr",
                            "actor/ppo_kl",
                            "actor/pg_clipfrac",
                            "actor/final_loss",
                            "response_length/mean",
                            "response_length/max",
                            "response_length/min",
                            "prompt_length/mean",
                            "prompt_length/max",
                            "prompt_length/min",
                            "perf/throughput",
                            "perf/total_num_tokens",
                            "perf/micro_batches",
                            "critic/score/mean",
                            "critic/score/max",
                            "critic/score/min",
                            "critic/advantages/mean",
                            "critic/advantages/max",
                            "critic/advantages/min",
                            "time/train_step",
                            "time/update_actor",
                            "time/read_experience",
                            "time/sync_weight",
                            "sample/model_version/mean",
                            "sample/model_version/max",
                            "sample/model_version/min",
                            "sample/empty_response_count",
                            "actor/entropy_loss",
                            "actor/entropy_coef",
                            "actor/pg_clipfrac_lower",
                            "response_length/clip_ratio",
                            "actor/kl_loss",
                            "actor/kl_coef"})
        m[k] = std::sin(x * 0.001 + static_cast<double>(m.size())) * 1.2345678901234567;
      trainer.log(m, step);
    } else {
      for (const char* k : {"rollout/reward/mean",
                            "rollout/reward/max",
                            "rollout/reward/min",
                            "rollout/accuracy/mean",
                            "rollout/accuracy/max",
                            "rollout/accuracy/min",
                            "rollout/finished_task_count",
                            "rollout/failed_task_count",
                            "rollout/model_version",
                            "time/explore_step",
                            "rollout/time/run_execution/mean",
                            "rollout/time/run_execution/max",
                            "rollout/time/run_execution/min",
                            "experience_pipeline/experience_count",
                            "experience_pipeline/filtered_count",
                            "critic/advantages/mean",
                            "critic/advantages/max",
                            "critic/advantages/min",
                            "critic/returns/mean",
                            "critic/returns/max",
                            "critic/returns/min",
                            "rollout/prefix_cache/hit_rate",
                            "rollout/prefix_cache/pages",
                            "rollout/prefix_cache/evictions"})
        m[k] = std::cos(x * 0.002 + static_cast<double>(m.size())) * 0.987654321;
      explorer.log(m, step);
    }
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t lines = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int64_t exps = argc > 2 ? std::atoll(argv[2]) : 200000;
  const std::string dir = argc > 3 ? argv[3] : "/tmp/trinity-bench-studio";
  fs::remove_all(dir);
  const std::string job = dir + "/ckpt/bench/run";
  fs::create_directories(job + "/buffer");
  Timer t;
  write_metrics(job, lines, 1);
  const std::string mpath = job + "/monitor/metrics.jsonl";
  std::fprintf(stderr, "wrote %lld metric lines (%.0f MB) in %.1f s\n", static_cast<long long>(lines),
               static_cast<double>(fs::file_size(mpath)) / 1e6, t.seconds());
  t.reset();
  {
    buffer::StorageConfig sc;
    sc.name = "exp", sc.storage_type = "sql", sc.path = job + "/buffer/exp.db";
    auto s = buffer::open_storage(sc);
    std::vector<buffer::Experience> batch;
    for (int64_t i = 0; i < exps; ++i) {
      buffer::Experience e;
      e.eid.batch = std::to_string(i / 128), e.eid.task = i % 128, e.eid.suffix = "abcdef";
      e.tokens.assign(96, 7);
      e.prompt_length = 32;
      e.logprobs.assign(64, -0.5f);
      e.action_mask.assign(64, 1);
      e.reward = static_cast<double>((i * 7919) % 1000) / 1000.0;
      e.model_version = i / 1024;
      batch.push_back(std::move(e));
      if (batch.size() == 4096) s->write(batch), batch.clear();
    }
    if (!batch.empty()) s->write(batch);
  }
  std::fprintf(stderr, "wrote %lld experiences in %.1f s\n", static_cast<long long>(exps), t.seconds());

  std::string series_q;
  for (const auto& s : kSeries) series_q += (series_q.empty() ? "" : ",") + s;
  auto start = [&] {
    studio::StudioOptions o;
    o.root = dir, o.port = 0, o.token = "bench-token";
    auto s = std::make_unique<studio::Studio>(o);
    s->bind();
    return s;
  };
  auto get = [](const std::string& url) {
    const auto r = env::http_request("GET", url, "", 120, {{"Authorization", "Bearer bench-token"}});
    if (r.status != 200) {
      std::fprintf(stderr, "GET %s: %d %s\n", url.c_str(), r.status, r.body.substr(0, 300).c_str());
      std::exit(1);
    }
    return r.body;
  };
  std::vector<double> cold, keys_s, live, page_ms;
  size_t points = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto s = start();
    std::thread th([&] { s->run(); });
    const std::string base = s->url().substr(0, s->url().find("/?token="));
    const std::string url = base + "/api/metrics?run=ckpt/bench/run&points=2000&series=" + series_q;
    Timer c;
    const json j = json::parse(get(url));
    cold.push_back(c.seconds());
    Timer names;
    get(base + "/api/metrics/keys?run=ckpt/bench/run");
    keys_s.push_back(names.seconds());
    points = j["series"][0]["values"].size();
    for (int k = 0; k < 3; ++k) {
      write_metrics(job, 100, lines / 2 + 1 + rep * 1000 + k * 100);
      Timer l;
      get(url);
      live.push_back(l.seconds());
    }
    const std::string src = "ckpt/bench/run/buffer/exp.db%23exp";
    for (const std::string& q : std::vector<std::string>{"&offset=" + std::to_string(std::max<int64_t>(0, exps - 40)),
                                                         std::string("&offset=1000&min_reward=0.5&order=reward_desc"),
                                                         "&step=" + std::to_string(exps / 256)}) {
      Timer p;
      get(base + "/api/rollouts?source=" + src + "&limit=20" + q);
      page_ms.push_back(p.seconds() * 1e3);
    }
    s->stop();
    th.join();
  }

  // Baseline 1: parse every line with nlohmann::json, collect the 8 series.
  std::vector<double> nl;
  for (int rep = 0; rep < 2; ++rep) {
    Timer b;
    std::ifstream in(mpath);
    std::vector<std::vector<double>> cols(kSeries.size());
    for (std::string l; std::getline(in, l);) {
      const json j = json::parse(l, nullptr, false);
      if (!j.is_object()) continue;
      const std::string role = j.value("role", "");
      for (size_t i = 0; i < kSeries.size(); ++i) {
        const auto colon = kSeries[i].find(':');
        if (kSeries[i].compare(0, colon, role) != 0) continue;
        const auto it = j.find(kSeries[i].substr(colon + 1));
        if (it != j.end() && it->is_number()) cols[i].push_back(it->get<double>());
      }
    }
    nl.push_back(b.seconds());
  }
  // Baseline 2: Python's json module, as a dashboard script would.
  const std::string py = dir + "/baseline.py";
  {
    std::ofstream o(py);
    o << "import json, sys\nwant = " << json(kSeries).dump()
      << "\ncols = {k: [] for k in want}\nfor line in open(sys.argv[1]):\n    j = json.loads(line)\n"
         "    for k in want:\n        r, m = k.split(':', 1)\n        if j.get('role') == r and m in j:\n"
         "            cols[k].append((j['step'], j[m]))\nprint(sum(len(v) for v in cols.values()))\n";
  }
  std::vector<double> pyt;
  for (int rep = 0; rep < 2; ++rep) {
    Timer b;
    const int rc = std::system(("/usr/bin/python3 " + py + " " + mpath + " > /dev/null").c_str());
    if (rc != 0) std::fprintf(stderr, "python baseline failed (%d)\n", rc);
    pyt.push_back(b.seconds());
  }
  const double mc = median(cold), ml = median(live);
  std::printf("| metrics.jsonl | %lld lines, %.0f MB, %zu series -> %zu points each |\n", static_cast<long long>(lines),
              static_cast<double>(fs::file_size(mpath)) / 1e6, kSeries.size(), points);
  std::printf("| chart, cold (index + extract + JSON), studio API | %.3f s |\n", mc);
  std::printf("| metric names (scan every line's keys, 2 threads), studio API | %.3f s |\n", median(keys_s));
  std::printf("| chart, live update (100 new lines), studio API | %.1f ms |\n", ml * 1e3);
  std::printf("| parse every line, nlohmann::json | %.3f s (%.1fx the studio's cold chart) |\n", median(nl),
              median(nl) / mc);
  std::printf("| parse every line, Python json | %.3f s (%.1fx) |\n", median(pyt), median(pyt) / mc);
  std::printf("| rollouts page of %lld experiences (end / filter+order / step), median | %.1f ms |\n",
              static_cast<long long>(exps), median(page_ms));
  return 0;
}
