// `mode: serve` (trinity-rft.md §4.4; docs/agents.md "Serve mode"): an OpenAI endpoint on
// explorer.listen_address:proxy_port over the rollout model that records every call (ServeStore,
// <job>/buffer/proxy_history.db, or tables beside a PostgreSQL buffer) and takes rewards later:
//   POST /feedback {"reward": r, "msg_ids": [response ids], "task_id": "...", "run_id": 0}
//   POST /commit   the rewarded calls -> experiences (one explore step, group advantages by task)
//                  written to buffer.trainer_input.experience_buffer, where a `mode: train` process
//                  trains on them
//   GET  /metrics  Trinity's counters as JSON (Prometheus text for scrapers that ask for it)
// New checkpoints of the trainer (checkpoint sync) are swapped in as they appear; requests in flight
// finish on the weights they started with. Runs until Ctrl-C.
#include "launcher/serve_mode.h"

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "algorithm/algorithm.h"
#include "buffer/pg_storage.h"
#include "buffer/storage.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "explorer/engine_client.h"
#include "explorer/serve_store.h"
#include "model/step_weights.h"
#include "monitor/monitor.h"
#include "pipeline/advantages.h"
#include "server/server.h"
#include "sync/synchronizer.h"
#include "workflow/history.h"

namespace trinity::launcher {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// What the endpoints share.
struct ServeState {
  const config::Config& cfg;
  std::unique_ptr<explorer::ServeStore> store;
  std::unique_ptr<buffer::ExperienceStorage> out;
  algo::Algorithm algo;
  monitor::Monitor mon;
  std::shared_ptr<const explorer::RolloutModel> rm;
  std::mutex commit_mu;
  Rng rng;
  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> experiences{0};
  ServeState(const config::Config& c, const std::string& db, std::unique_ptr<buffer::ExperienceStorage> o,
             std::shared_ptr<const explorer::RolloutModel> m)
      : cfg(c),
        store(explorer::open_serve_store(db, c.buffer.trainer_input.experience_buffer.name + "_proxy_history")),
        out(std::move(o)),
        algo(c.algorithm),
        mon(c.job_dir(), "explorer", c.monitor.monitor_type),
        rm(std::move(m)),
        rng(static_cast<uint64_t>(c.explorer.rollout_model.seed)) {}
};

// POST /feedback.
std::pair<int, std::string> feedback(ServeState& s, const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (!j.is_object()) throw std::invalid_argument("the body must be a JSON object {\"reward\": r, \"msg_ids\": [...]}");
  const auto r = j.find("reward");
  if (r == j.end() || !r->is_number() || !std::isfinite(r->get<double>()))
    throw std::invalid_argument("'reward' must be a finite number");
  const auto ids = j.find("msg_ids");
  if (ids == j.end() || !ids->is_array() || ids->empty())
    throw std::invalid_argument("'msg_ids' must be a non-empty list of response ids (the `id` of each answer)");
  std::vector<std::string> msg_ids;
  for (const auto& x : *ids) {
    if (!x.is_string()) throw std::invalid_argument("'msg_ids' must hold strings, got " + x.dump());
    msg_ids.push_back(x.get<std::string>());
  }
  std::string task_id = "0";
  if (const auto t = j.find("task_id"); t != j.end() && !t->is_null())
    task_id = t->is_string() ? t->get<std::string>() : t->dump();
  int64_t run_id = 0;
  if (const auto rr = j.find("run_id"); rr != j.end() && !rr->is_null()) {
    if (!rr->is_number_integer()) throw std::invalid_argument("'run_id' must be an integer");
    run_id = rr->get<int64_t>();
  }
  const auto fb = s.store->feedback(msg_ids, r->get<double>(), task_id, run_id);
  return {200, json{{"status", "success"}, {"updated", fb.updated}, {"unknown_msg_ids", fb.unknown}}.dump()};
}

// POST /commit.
std::pair<int, std::string> commit(ServeState& s) {
  std::lock_guard<std::mutex> l(s.commit_mu);
  const auto groups = s.store->ready();
  const int64_t step = s.store->get_meta("explore_step", 0) + 1;
  if (groups.empty()) return {200, json{{"status", "success"}, {"experiences", 0}, {"step", step - 1}}.dump()};
  std::map<std::string, int64_t> task_index;
  std::vector<buffer::Experience> exps;
  std::vector<std::pair<std::string, int64_t>> rows;
  int64_t inconsistent = 0;
  for (const auto& g : groups) {
    const int64_t task = task_index.emplace(g.task_id, static_cast<int64_t>(task_index.size())).first->second;
    workflow::HistoryExperiences h = workflow::experiences_from_history(g.calls);
    inconsistent += h.inconsistent;
    for (auto& e : h.experiences) {
      e.reward = g.reward;
      e.eid.batch = std::to_string(step);
      e.eid.task = task;
      e.eid.run = g.run_id;
      json info = json::parse(e.info.empty() ? "{}" : e.info);
      e.eid.suffix = info["call_ids"].empty() ? buffer::random_suffix() : info["call_ids"][0].get<std::string>();
      info["task_id"] = g.task_id;
      e.info = info.dump();
      exps.push_back(std::move(e));
    }
    for (const auto& c : g.calls) rows.emplace_back(c.id, c.choice);
  }
  std::map<std::string, double> m;
  if (s.algo.advantage_location() == algo::AdvLocation::kExplorer)
    for (auto& [k, v] : pipeline::compute_advantages(s.algo, exps, s.rng)) m[k] = v;
  if (!s.out->write(exps, 60.0))
    return {503, json{{"error",
                       {{"message", "the experience buffer stayed full for 60 s; commit again later"},
                        {"type", "server_error"}}}}
                     .dump()};
  s.store->mark_committed(rows);
  s.store->set_meta("explore_step", step);
  s.experiences += static_cast<int64_t>(exps.size());
  double reward = 0;
  for (const auto& e : exps) reward += *e.reward;
  m["rollout/experience_count"] = static_cast<double>(exps.size());
  m["rollout/reward/mean"] = reward / static_cast<double>(exps.size());
  m["rollout/agent/inconsistent_history_count"] = static_cast<double>(inconsistent);
  m["rollout/model_version"] = static_cast<double>(s.rm->engine->model_version());
  s.mon.log(m, step);
  log::info("serve: commit ", step, ": ", exps.size(), " experiences from ", rows.size(), " rewarded calls of ",
            task_index.size(), " task(s)");
  return {200, json{{"status", "success"}, {"experiences", exps.size()}, {"step", step}}.dump()};
}

// GET /metrics: Trinity's names as JSON, or Prometheus text for a scraper.
std::pair<int, std::string> metrics(ServeState& s, server::Server& srv, const std::string& accept) {
  if (accept.find("text/plain") != std::string::npos || accept.find("openmetrics") != std::string::npos)
    return {200, srv.metrics_text()};
  const auto c = s.store->counts();
  return {200, json{{"rollout/model_0/total_request_count", s.requests.load()},
                    {"rollout/model_0/model_version", s.rm->engine->model_version()},
                    {"rollout/total_experience_count", s.experiences.load()},
                    {"rollout/ready_experience_count", c.ready},
                    {"rollout/recorded_call_count", c.recorded},
                    {"rollout/committed_call_count", c.committed},
                    {"explore_step_num", s.store->get_meta("explore_step", 0)}}
                   .dump()};
}

}  // namespace

StageSummary run_serve(const config::Config& c, const std::atomic<bool>* stop) {
  StageSummary summary;
  auto weights = std::make_shared<model::StepWeights>(c.model.model_path);  // base shared by every version
  auto sync = sync::make_checkpoint_sync(c.job_dir(), c.model.model_path, 1.0, weights);
  const auto& ebc = c.buffer.trainer_input.experience_buffer;
  if (!ebc.path.empty() && ebc.storage_type != "queue" && !buffer::is_postgres_url(ebc.path))
    file::make_dirs(fs::path(buffer::sqlite_path_from_url(ebc.path)).parent_path().string());
  if (ebc.storage_type == "queue")
    throw ConfigError("config",
                      "mode serve writes experiences for a separate `mode: train` process: set "
                      "buffer.trainer_input.experience_buffer.storage_type to sql");
  auto storage = buffer::open_storage(ebc);

  int64_t version = c.continue_from_checkpoint ? std::max<int64_t>(0, sync->latest_version()) : 0;
  auto rm = make_rollout_model(c,
                               version > 0 ? weights->load(file::join(c.job_dir(), strcat("global_step_", version)))
                                           : initial_rollout_weights(c, *weights),
                               version);
  file::make_dirs(file::join(c.job_dir(), "buffer"));
  // The call history lives beside the buffer: in its PostgreSQL database when it has one (serve
  // processes on several machines then share it), else in <job>/buffer/proxy_history.db.
  const std::string history_at =
      buffer::is_postgres_url(ebc.path) ? ebc.path : file::join(c.job_dir(), "buffer/proxy_history.db");
  ServeState st(c, history_at, std::move(storage), rm);
  if (const int64_t n = st.store->drop_pending_older_than(wall_seconds() - c.explorer.proxy_pending_ttl))
    log::warn("serve: dropped ", n,
              " recorded call(s) that got no reward within explorer.proxy_pending_ttl = ", c.explorer.proxy_pending_ttl,
              " s");
  {
    const auto k = st.store->counts();
    if (k.recorded + k.ready > 0)
      log::info("serve: ", k.recorded, " recorded call(s) awaiting a reward and ", k.ready,
                " rewarded call(s) awaiting /commit, kept from before the restart");
  }

  std::string key = c.explorer.proxy_api_key;
  if (key.empty())
    if (const char* e = std::getenv("TRINITY_API_KEY")) key = e;
  auto history = std::make_shared<tok::ChatHistory>(4096, /*rolling=*/true);  // for splicing only
  server::ServerOptions so;
  so.host = c.explorer.listen_address;
  so.port = static_cast<int>(c.explorer.proxy_port);
  so.model_name = "trinity";
  so.any_model = true;
  ServeState* sp = &st;
  so.recording_for_key = [key, history, sp](const std::string& k) -> std::optional<server::Recording> {
    if (!key.empty() && k != key) return std::nullopt;
    return server::Recording{history, nullptr, [sp](const tok::RecordedCall& call) {
                               sp->store->record(call);
                               if (call.choice == 0) ++sp->requests;
                             }};
  };
  server::Server* srv_ptr = nullptr;
  so.routes.push_back(
      {"POST", "/feedback", true, [sp](const std::string& b, const std::string&) { return feedback(*sp, b); }});
  so.routes.push_back({"POST", "/commit", true, [sp](const std::string&, const std::string&) { return commit(*sp); }});
  so.routes.push_back({"GET", "/metrics", false, [sp, &srv_ptr](const std::string&, const std::string& accept) {
                         return metrics(*sp, *srv_ptr, accept);
                       }});
  server::Server srv(rm->engine, std::shared_ptr<const tok::Tokenizer>(rm->chat, &rm->chat->tokenizer()), rm->chat,
                     rm->stop_ids, so);
  srv_ptr = &srv;
  const int port = srv.bind();
  std::thread th([&srv] { srv.run(); });
  sync->set_state("explorer", sync::PeerState::kRunning);
  log::info("serve: OpenAI endpoint on http://", so.host, ":", port, "/v1 (model version ", version,
            key.empty() ? ", no API key" : ", API key required", "); POST /feedback, POST /commit, GET /metrics");
  std::printf("serving on http://%s:%d/v1\n", so.host.c_str(), port);
  std::fflush(stdout);

  double last_drop = wall_seconds();
  while (!(stop && stop->load())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const int64_t v = sync->latest_version();
    if (v > version) {
      try {
        const std::string d = file::join(c.job_dir(), strcat("global_step_", v));
        rm->set_weights(weights->load(d), v);
        version = v;
        log::info("serve: now serving weights version ", v, " (", d, ")");
      } catch (const std::exception& e) {
        log::warn("serve: cannot load checkpoint ", v, " yet (", e.what(), "); retrying");
      }
    }
    if (wall_seconds() - last_drop > 60) {
      last_drop = wall_seconds();
      if (const int64_t n = st.store->drop_pending_older_than(last_drop - c.explorer.proxy_pending_ttl))
        log::warn("serve: dropped ", n, " recorded call(s) with no reward after ", c.explorer.proxy_pending_ttl, " s");
    }
  }
  srv.stop();
  th.join();
  sync->set_state("explorer", sync::PeerState::kFinished);
  summary.explore_steps = st.store->get_meta("explore_step", 0);
  summary.stopped = true;
  return summary;
}

}  // namespace trinity::launcher
