// Explorer loop: explore steps, experience pipeline, sync points, evaluation (see explorer.h).
#include "explorer/explorer.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>

#include "algorithm/algorithm.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "core/timer.h"
#include "monitor/metrics_util.h"
#include "monitor/monitor.h"
#include "monitor/progress.h"
#include "pipeline/advantages.h"
#include "sync/synchronizer.h"
#include "workflow/command_workflow.h"

namespace trinity::explorer {

using nlohmann::json;

namespace {

// Reason class of a failed task, for metrics: timeout | no_experiences | shutdown | error.
std::string failure_class(const std::string& error) {
  if (error.rfind("timeout", 0) == 0) return "timeout";
  if (error.find("returned no experiences") != std::string::npos) return "no_experiences";
  if (error == "shutdown") return "shutdown";
  // "[agent] <reason>: ..." (command_workflow), "[env] <reason>: ..." (env_workflow), "[judge] <reason>: ..."
  // (judge rewards) -> <component>_<reason>.
  for (const char* component : {"agent", "env", "judge"}) {
    const std::string tag = strcat("[", component, "] ");
    if (const size_t a = error.find(tag); a != std::string::npos) {
      const size_t b = a + tag.size(), colon = error.find(':', b);
      if (colon != std::string::npos && colon > b && colon - b <= 16 && error.find(' ', b) > colon)  // one word
        return strcat(component, "_", error.substr(b, colon - b));
    }
  }
  return "error";
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

Explorer::Explorer(ExplorerOptions opts, std::shared_ptr<const RolloutModel> model,
                   std::unique_ptr<buffer::TasksetScheduler> tasks, std::vector<EvalSet> evals, algo::Algorithm* algo,
                   buffer::ExperienceStorage* out, monitor::Monitor* monitor, sync::Synchronizer* sync,
                   const std::atomic<bool>* stop)
    : opts_(std::move(opts)),
      model_(std::move(model)),
      tasks_(std::move(tasks)),
      evals_(std::move(evals)),
      algo_(algo),
      out_(out),
      monitor_(monitor),
      sync_(sync),
      stop_(stop),
      ops_(opts_.experience_operators, opts_.judge),
      rng_(opts_.seed) {
  TRINITY_ASSERT(model_ || opts_.rollout_client, "Explorer without a rollout model or client factory");
  if (tasks_ && tasks_->wants_feedback() &&
      std::none_of(opts_.experience_operators.begin(), opts_.experience_operators.end(),
                   [](const pipeline::OperatorConfig& o) { return o.name == "pass_rate_calculator"; }))
    log::warn(
        "explorer: a taskset uses data_selector difficulty_based but data_processor.experience_pipeline "
        "has no pass_rate_calculator operator: its estimates never learn from the rollouts (add "
        "{name: pass_rate_calculator} to the operators)");
  std::shared_ptr<const RolloutModel> m = model_;
  auto aux = aux_;
  RolloutClientFactory make = opts_.rollout_client;
  if (!make)
    make = [m](const buffer::Task& task, uint64_t seed) {
      auto c = std::make_shared<EngineClient>(m, &task, seed);
      return RolloutClient{c, [c] { c->cancel(); }};
    };
  pool_ = std::make_unique<RunnerPool>(opts_.runner, [make, aux](const buffer::Task& task, uint64_t seed) {
    RolloutClient c = make(task, seed);
    std::vector<std::shared_ptr<EngineClient>> ac;
    for (size_t i = 0; i < aux->size(); ++i)
      ac.push_back(std::make_shared<EngineClient>((*aux)[i], nullptr, seed + 7 * (i + 1)));
    AttemptClient ret{c.client,
                      [cancel = c.cancel, ac] {
                        cancel();
                        for (const auto& a : ac) a->cancel();
                      },
                      {}};
    for (const auto& a : ac) ret.auxiliary.push_back(a);
    return ret;
  });
  if (tasks_) saved_tasks_state_ = tasks_->state();
}

Explorer::~Explorer() { pool_->shutdown(); }

uint64_t Explorer::task_seed(int64_t step, int64_t task) const {
  return opts_.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(step) * 1000003ULL + static_cast<uint64_t>(task);
}

bool Explorer::restore() {
  if (opts_.job_dir.empty()) return false;
  const std::string path = file::join(opts_.job_dir, "explorer_meta.json");
  if (!file::exists(path)) return false;
  json j;
  try {
    j = json::parse(file::read_all(path));
    step_ = saved_step_ = j.at("latest_iteration").get<int64_t>();
    written_ = j.value("experiences_written", int64_t{0});
    if (tasks_ && j.contains("taskset_states")) tasks_->load_state(j.at("taskset_states").dump());
    if (j.contains("written_at"))
      for (const auto& [k, v] : j.at("written_at").items()) written_at_[std::stoll(k)] = v.get<int64_t>();
  } catch (const std::exception& e) {  // json errors and std::stoll of a bad key
    throw IoError("explorer", strcat(path, ": not a valid explorer state: ", e.what()));
  }
  written_at_[step_] = written_;
  if (tasks_) saved_tasks_state_ = tasks_->state();
  log::info("explorer: resumed at step ", step_, " (", written_, " experiences written before)");
  return true;
}

void Explorer::save_state() {
  if (opts_.job_dir.empty()) return;
  json j = {{"latest_iteration", saved_step_},
            {"experiences_written", written_},
            {"model_version", model_->engine->model_version()}};
  if (tasks_) j["taskset_states"] = json::parse(saved_tasks_state_);
  // Experiences written up to each recent step: a resumed explorer waits for the weights version an
  // uninterrupted run would have had (sync points look back sync_offset steps).
  json wa = json::object();
  const int64_t keep = opts_.sync_offset + opts_.sync_interval + 1;
  for (auto it = written_at_.lower_bound(saved_step_ - keep); it != written_at_.end() && it->first <= saved_step_; ++it)
    wa[std::to_string(it->first)] = it->second;
  j["written_at"] = std::move(wa);
  file::make_dirs(opts_.job_dir);
  file::write_atomic(file::join(opts_.job_dir, "explorer_meta.json"), j.dump(1));
}

void Explorer::finish_step(Pending& p) {
  std::vector<buffer::Experience> exps;
  std::vector<Metrics> task_rows;
  int64_t ok = 0, failed = 0;
  std::map<std::string, int64_t> fails;
  double inconsistent = 0;  // agent calls that extended no earlier call (sum over runs)
  bool agents = false;
  for (auto& f : p.results) {
    TaskResult r = f.get();
    if (r.ok) {
      ++ok;
      task_rows.push_back(r.metrics);
      for (const auto& rm : r.run_metrics)
        if (auto it = rm.find(workflow::kInconsistentHistoryMetric); it != rm.end())
          inconsistent += it->second, agents = true;
      for (auto& e : r.experiences) exps.push_back(std::move(e));
    } else {
      ++failed;
      const std::string c = failure_class(r.error);
      fails[c] += 1;
      summary_.failures[c] += 1;
      log::warn("explorer: step ", p.step, ": a task failed after ", r.attempts, " attempt(s): ", r.error);
    }
  }
  Metrics m = monitor::gather_metrics(task_rows, "rollout");
  if (!ops_.empty() && !exps.empty()) {
    Timer t;
    pipeline::OperatorContext ctx;
    for (auto& [k, v] : ops_.run(exps, ctx)) m[k] = v;
    // BOTS: the step's pass rates update the difficulty_based selectors (Trinity's feedback()).
    if (tasks_)
      for (const auto& [ts, fb] : ctx.selector_feedback) tasks_->feedback(ts, fb.rows, fb.values);
    m["time/experience_pipeline/operators"] = t.seconds();
  }
  if (algo_ && algo_->advantage_location() == algo::AdvLocation::kExplorer && !exps.empty()) {
    Timer t;
    for (auto& [k, v] : pipeline::compute_advantages(*algo_, exps, rng_)) m[k] = v;
    m["time/experience_pipeline/group_advantage"] = t.seconds();
  }
  Timer tw;
  if (out_ && !exps.empty()) {
    if (!out_->write(exps, opts_.sync_timeout))
      throw IoError("explorer", strcat("the experience buffer ", out_->describe(), " stayed full for ",
                                       opts_.sync_timeout, " s (is the trainer reading it?)"));
  }
  written_ += static_cast<int64_t>(exps.size());
  written_at_[p.step] = written_;
  m["time/experience_pipeline/write"] = tw.seconds();
  m["rollout/finished_task_count"] = static_cast<double>(ok);
  m["rollout/failed_task_count"] = static_cast<double>(failed);
  for (const auto& [c, n] : fails) m["rollout/failed/" + c] = static_cast<double>(n);
  if (agents) m[std::string("rollout/") + workflow::kInconsistentHistoryMetric] = inconsistent;
  m["rollout/model_version"] = static_cast<double>(model_->engine->model_version());
  {  // Prefix cache: tokens looked up / reused since the last step, pages held, evictions so far.
    const engine::EngineStats es = model_->engine->stats();
    const int64_t dq = es.prefix_cache_query_tokens - prefix_query_seen_;
    const int64_t dh = es.prefix_cache_hit_tokens - prefix_hit_seen_;
    prefix_query_seen_ = es.prefix_cache_query_tokens;
    prefix_hit_seen_ = es.prefix_cache_hit_tokens;
    m["rollout/prefix_cache/query_tokens"] = static_cast<double>(dq);
    m["rollout/prefix_cache/hit_tokens"] = static_cast<double>(dh);
    m["rollout/prefix_cache/hit_rate"] = dq > 0 ? static_cast<double>(dh) / static_cast<double>(dq) : 0.0;
    m["rollout/prefix_cache/pages"] = static_cast<double>(es.prefix_cache_pages);
    m["rollout/prefix_cache/evictions"] = static_cast<double>(es.prefix_cache_evictions);
  }
  m["experience_pipeline/experience_count"] = static_cast<double>(exps.size());
  m["time/explore_step"] = now_s() - p.t0;
  summary_.tasks_ok += ok;
  summary_.tasks_failed += failed;
  summary_.experiences += static_cast<int64_t>(exps.size());
  if (monitor_) monitor_->log(m, p.step);
  // Rollout examples: the best and the worst experience of the step.
  if (monitor_ && !exps.empty()) {
    const buffer::Experience* best = &exps[0];
    const buffer::Experience* worst = &exps[0];
    for (const auto& e : exps) {
      if (e.reward.value_or(0) > best->reward.value_or(0)) best = &e;
      if (e.reward.value_or(0) < worst->reward.value_or(0)) worst = &e;
    }
    for (auto [tag, e] : {std::pair{"best", best}, std::pair{"worst", worst}})
      monitor_->log_text(strcat("rollout_examples/", tag),
                         strcat("reward ", e->reward.value_or(0), "\nprompt: ", e->prompt_text, "\nresponse: ",
                                e->response_text),
                         p.step);
  }
}

// A resumed explorer (step_ > 0) first takes the weights an uninterrupted run would have used for its
// next step: those of its last sync point at or before step_. Without this the first explore steps
// after a resume ran on the trainer's checkpoint, up to save_interval versions stale.
bool Explorer::sync_on_resume() {
  const int64_t interval = std::max<int64_t>(1, opts_.sync_interval);
  if (step_ <= opts_.sync_offset) return true;
  const int64_t sp = step_ - (step_ - opts_.sync_offset) % interval;
  const int64_t have = model_->engine->model_version();
  // The trainer can only get as far as the experiences still in the buffer take it (an in-memory
  // queue lost those of the crashed run: then there is nothing to wait for).
  int64_t reachable = have;
  if (out_) {
    const buffer::StorageStats st = out_->stats();
    reachable = have + (st.ready + st.leased) / std::max<int64_t>(1, opts_.train_batch_size);
  }
  log::info("explorer: resumed at step ", step_, " with weights version ", have,
            "; waiting for the version of sync point ", sp, " before exploring on");
  const bool ok = sync_weights(sp, false, reachable);
  log::info("explorer: exploring step ", step_ + 1, " with weights version ", model_->engine->model_version());
  return ok;
}

bool Explorer::pull_newest_weights() {
  const int64_t have = model_->engine->model_version();
  sync::Weights w;
  const sync::WaitStatus st = sync_->wait_for(have + 1, have, 0.0, &w);
  if (w.model && w.version > have) model_->set_weights(w.model, w.version);
  return st != sync::WaitStatus::kTrainerDone;
}

bool Explorer::sync_weights(int64_t step, bool log_wait, int64_t max_want) {
  if (!sync_) return true;
  // The version the trainer can reach with the data written up to step - sync_offset.
  const int64_t upto = step - opts_.sync_offset;
  int64_t written = 0;
  auto it = written_at_.upper_bound(upto);
  if (it != written_at_.begin()) written = std::prev(it)->second;
  const int64_t tbs = std::max<int64_t>(1, opts_.train_batch_size);
  const int64_t want = std::min(written / tbs, max_want);
  const int64_t have = model_->engine->model_version();
  if (!opts_.sync_blocking) return pull_newest_weights();
  if (want <= have) return true;
  Timer t;
  sync::Weights w;
  const sync::WaitStatus st = sync_->wait_for(want, have, opts_.sync_timeout, &w);
  if (w.model && w.version > have) model_->set_weights(w.model, w.version);
  if (monitor_ && log_wait) monitor_->log({{"time/wait_sync", t.seconds()}}, step);
  if (st == sync::WaitStatus::kOk) return true;
  if (st == sync::WaitStatus::kTrainerDone) {
    std::string err;
    const sync::PeerState ps = sync_->state("trainer", &err);
    if (ps != sync::PeerState::kFinished) {
      summary_.trainer_error = err.empty() ? strcat("trainer ", sync::peer_state_name(ps)) : err;
      log::warn("explorer: the trainer stopped (", summary_.trainer_error, "); exploring ends");
    }
    return false;
  }
  std::string terr;
  const sync::PeerState tst = sync_->state("trainer", &terr);
  throw Error("explorer", strcat("waited synchronizer.sync_timeout = ", opts_.sync_timeout, " s for weights version ",
                                 want, " at explore step ", step, " (have version ", have,
                                 "; trainer state: ", sync::peer_state_name(tst), terr.empty() ? "" : ": ", terr, ")"));
}

Metrics Explorer::evaluate(int64_t step, const std::string& prefix) {
  Metrics all;
  if (evals_.empty()) return all;
  Timer t;
  for (const auto& es : evals_) {
    std::vector<std::shared_future<TaskResult>> fs;
    for (size_t i = 0; i < es.taskset->size(); ++i) {
      TaskJob job;
      job.task = es.taskset->at(i);
      job.task.is_eval = true;
      job.batch_id = strcat(step, "/", es.name);
      job.task_id = static_cast<int64_t>(i);
      job.seed = task_seed(-1 - step, static_cast<int64_t>(i));
      fs.push_back(pool_->submit(std::move(job)));
    }
    std::vector<Metrics> rows;
    int64_t done = 0;
    for (auto& f : fs) {
      // A stop request (Ctrl-C / SIGTERM) also interrupts an evaluation: its tasks are cancelled and
      // nothing is logged for this step.
      while (f.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
        if (stop_ && stop_->load()) {
          pool_->shutdown();
          summary_.stopped = true;
          log::warn("explorer: evaluation at step ", step,
                    " interrupted by a stop request; its metrics are not logged");
          return {};
        }
      }
      TaskResult r = f.get();
      if (!r.ok) continue;
      ++done;
      rows.push_back(monitor::task_metrics(r.run_metrics, true));
    }
    Metrics m = monitor::aggregate_eval(rows, prefix + "/" + es.name, opts_.detailed_stats);
    m[prefix + "/" + es.name + "/finished_task_count"] = static_cast<double>(done);
    all.insert(m.begin(), m.end());
  }
  all["time/" + prefix] = t.seconds();
  if (monitor_) monitor_->log(all, step);
  last_eval_version_ = model_ ? model_->engine->model_version() : 0;
  summary_.evals.push_back({last_eval_version_, all});
  return all;
}

void Explorer::submit_step(Pending& p, std::vector<buffer::Task> batch) {
  p.t0 = now_s();
  for (size_t i = 0; i < batch.size(); ++i) {
    TaskJob job;
    job.task = std::move(batch[i]);
    job.batch_id = std::to_string(p.step);
    job.task_id = static_cast<int64_t>(i);
    job.seed = task_seed(p.step, static_cast<int64_t>(i));
    p.results.push_back(pool_->submit(std::move(job)));
  }
}

ExplorerSummary Explorer::run() {
  TRINITY_ASSERT(model_ != nullptr, "Explorer::run needs a RolloutModel (a client factory alone only evaluates)");
  if (claims_) return run_shared();
  auto stopping = [&] { return stop_ && stop_->load(); };
  if (opts_.eval_on_startup && step_ == 0 && !evals_.empty()) evaluate(0);
  std::vector<Pending> pending;
  std::unique_ptr<monitor::ProgressBar> bar;
  if (opts_.progress && tasks_)
    bar = std::make_unique<monitor::ProgressBar>("explore", tasks_->max_steps());
  bool trainer_done = false;
  if (step_ > 0 && tasks_ && opts_.sync_with_trainer && sync_) trainer_done = !sync_on_resume();
  while (tasks_ && !stopping() && !trainer_done) {
    auto batch = tasks_->next_batch();
    if (!batch) break;
    step_ = tasks_->step();
    Pending p;
    p.step = step_;
    submit_step(p, std::move(*batch));
    p.tasks_state = tasks_->state();
    pending.push_back(std::move(p));
    const bool sync_point = !opts_.sync_with_trainer ||
                            (step_ > opts_.sync_offset && (step_ - opts_.sync_offset) % opts_.sync_interval == 0);
    if (!sync_point) continue;
    // The state is saved after each step's experiences are written, so a stop or crash at any
    // point resumes at the first step whose experiences are not in the buffer.
    for (auto& q : pending) {
      if (stopping()) break;
      finish_step(q);
      saved_tasks_state_ = tasks_->state_with_live_estimators(q.tasks_state);
      saved_step_ = q.step;
      save_state();
    }
    if (stopping()) break;
    pending.clear();
    if (bar) bar->update(step_);
    summary_.steps = step_;
    if (opts_.sync_with_trainer && !sync_weights(step_)) trainer_done = true;
    if (opts_.eval_interval > 0 && step_ % opts_.eval_interval == 0 && !stopping()) evaluate(step_);
  }
  if (stopping()) {
    pool_->shutdown();
    summary_.stopped = true;
    log::warn("explorer: stopped after step ", saved_step_, "; unfinished steps are discarded and will be explored again on resume");
    return summary_;
  }
  for (auto& q : pending) {
    finish_step(q);
    saved_tasks_state_ = tasks_->state_with_live_estimators(q.tasks_state);
    saved_step_ = q.step;
    save_state();
  }
  pending.clear();
  summary_.steps = step_;
  if (bar) bar->finish();
  return summary_;
}

}  // namespace trinity::explorer
