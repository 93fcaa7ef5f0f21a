// Launcher: stages and modes (see launcher.h).
#include "launcher/launcher.h"
#include "launcher/serve_mode.h"

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "algorithm/algorithm.h"
#include "buffer/dataset.h"
#include "buffer/pg_storage.h"
#include "buffer/step_claims.h"
#include "buffer/storage.h"
#include "buffer/task_scheduler.h"
#include "core/console.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "dist/comm.h"
#include "engine/engine.h"
#include "engine/sampling.h"
#include "explorer/explorer.h"
#include "explorer/external_client.h"
#include "hub/model.h"
#include "launcher/dist_train.h"
#include "launcher/llm_judge.h"
#include "launcher/run_status.h"
#include "launcher/task_pipeline_run.h"
#include "launcher/train_loop.h"
#include "model/checkpoint_dtype.h"
#include "model/step_weights.h"
#include "model/transformer.h"
#include "monitor/monitor.h"
#include "sync/synchronizer.h"
#include "tensor/blas.h"
#include "trainer/checkpoint_io.h"
#include "trainer/sft_data.h"
#include "trainer/trainer.h"
#include "workflow/workflow.h"

namespace trinity::launcher {

using nlohmann::json;
namespace fs = std::filesystem;

static_assert(config::kGreedyTemperature == engine::kGreedyTemperature, "the loader warns at the engine's threshold");

namespace {

// "error: 3, timeout: 1" from reason class -> count.
std::string failure_counts(const std::map<std::string, int64_t>& failures) {
  std::string out;
  for (const auto& [reason, n] : failures) out += strcat(out.empty() ? "" : ", ", reason, ": ", n);
  return out;
}

// Train steps the run will take (for LR schedules and progress): trainer.total_steps, else the
// explorer's step count (one train step per explore step when train_batch_size is the default).
int64_t planned_train_steps(const config::Config& c, int64_t explore_steps, std::optional<int64_t> dataset_steps) {
  if (c.trainer.total_steps) return *c.trainer.total_steps;
  if (dataset_steps) return *dataset_steps;
  const double per = static_cast<double>(c.buffer.batch_size * c.repeat_times) /
                     static_cast<double>(std::max<int64_t>(1, c.buffer.train_batch_size));
  return static_cast<int64_t>(std::ceil(static_cast<double>(explore_steps) * per));
}

}  // namespace

void configure_actor(model::Transformer& m, const config::Config& c) {
  m.set_gradient_checkpointing(c.trainer.gradient_checkpointing);
  if (!c.model.lora) return;
  const auto& l = *c.model.lora;
  if (!l.path.empty()) {
    model::load_adapter(m, l.path);
    const auto& lc = m.lora_config();
    log::info("trainer: LoRA adapter '", l.name, "' from ", l.path, " (rank ", lc.rank, ", alpha ", lc.alpha,
              "; its adapter_config.json wins over lora_rank / lora_alpha / target_modules)");
    return;
  }
  model::LoraConfig lc;
  lc.rank = l.lora_rank;
  lc.alpha = l.lora_alpha;
  lc.dropout = l.lora_dropout;
  lc.target_modules = l.target_modules;
  lc.exclude_modules = l.exclude_modules;
  m.add_lora(lc, static_cast<uint64_t>(c.explorer.rollout_model.seed));
  log::info("trainer: LoRA adapter '", l.name, "' rank ", lc.rank, ", alpha ", lc.alpha, ": ", m.num_trainable(),
            " trainable parameters of ", m.num_params() + m.num_held(), " (base frozen)");
}

trainer::TrainerOptions trainer_options(const config::Config& c, int64_t total_steps) {
  trainer::TrainerOptions o;
  o.optim.lr = c.optimizer.lr;
  o.optim.beta1 = c.optimizer.betas.size() > 0 ? c.optimizer.betas[0] : 0.9;
  o.optim.beta2 = c.optimizer.betas.size() > 1 ? c.optimizer.betas[1] : 0.999;
  o.optim.weight_decay = c.optimizer.weight_decay;
  o.schedule.type = c.optimizer.lr_scheduler_type;
  o.schedule.total_steps = total_steps;
  o.schedule.min_lr_ratio = c.optimizer.min_lr_ratio;
  o.schedule.warmup_steps = c.optimizer.lr_warmup_steps >= 0
                                ? c.optimizer.lr_warmup_steps
                                : static_cast<int64_t>(c.optimizer.lr_warmup_steps_ratio * static_cast<double>(total_steps));
  o.schedule.validate();
  o.grad_clip = c.trainer.grad_clip;
  o.share_prompts = c.trainer.share_prompt_prefix;
  if (c.trainer.use_dynamic_bsz)
    o.max_token_len_per_gpu = c.trainer.max_token_len_per_gpu;
  else
    o.micro_batch_size = c.trainer.micro_batch_size;
  // verl computes logprobs of logits / T with T = the first taskset's rollout temperature.
  o.temperature = c.model.temperature;
  if (!c.buffer.explorer_input.tasksets.empty() && c.buffer.explorer_input.tasksets[0].rollout_args.temperature)
    o.temperature = *c.buffer.explorer_input.tasksets[0].rollout_args.temperature;
  // Greedy rollouts (T below the engine's greedy threshold, 0 included) report logprobs at T = 1; dividing
  // the logits by a T of 1e-9 would overflow them.
  if (!(o.temperature >= engine::kGreedyTemperature)) o.temperature = 1.0;
  o.max_response_tokens = c.model.max_response_tokens;
  o.seed = static_cast<uint64_t>(c.explorer.rollout_model.seed);
  o.critic_optim.lr = c.trainer.critic.lr;
  o.rollout_correction.bypass_mode = c.trainer.rollout_correction.bypass_mode;
  o.rollout_correction.rollout_is = c.trainer.rollout_correction.rollout_is;
  o.rollout_correction.rollout_is_threshold = c.trainer.rollout_correction.rollout_is_threshold;
  o.cliprange_value = c.trainer.critic.cliprange_value;
  if (dist::world().size() > 1) o.comm = &dist::world();
  return o;
}

namespace {

// An engine with its tokenizer files and sampling defaults for one inference model.
std::shared_ptr<explorer::RolloutModel> inference_model(const config::InferenceModelConfig& r,
                                                        const std::string& model_path, const std::string& chat_template,
                                                        int64_t max_model_len,
                                                        std::shared_ptr<const model::Transformer> weights,
                                                        int64_t version) {
  auto rm = std::make_shared<explorer::RolloutModel>();
  rm->model_dir = model_path;
  rm->chat = explorer::RolloutModel::load_chat(model_path, weights->config().vocab_size, chat_template, &rm->stop_ids);
  rm->defaults.temperature = r.temperature;
  rm->defaults.top_p = r.top_p;
  rm->defaults.top_k = r.top_k;
  rm->defaults.repetition_penalty = r.repetition_penalty;
  rm->defaults.max_tokens = r.max_response_tokens;
  rm->defaults.min_tokens = r.min_response_tokens;
  rm->defaults.enable_thinking = r.enable_thinking;
  rm->defaults.prompt_truncation = r.enable_prompt_truncation;
  rm->defaults.max_prompt_tokens = r.max_prompt_tokens;
  engine::EngineOptions eo;
  eo.kv_cache_bytes = r.kv_cache_bytes;
  eo.prefix_cache = r.enable_prefix_caching;
  eo.max_model_len = max_model_len;
  eo.weight_format = r.weight_dtype == "bfloat16" ? engine::WeightFormat::kBF16 : engine::WeightFormat::kF32Packed;
  auto tk = std::make_shared<const tok::Tokenizer>(rm->chat->tokenizer());
  rm->init_weights(weights);
  rm->engine = std::make_shared<engine::Engine>(std::move(weights), version, tk, eo);
  return rm;
}

}  // namespace

std::shared_ptr<const model::Transformer> initial_rollout_weights(const config::Config& c, model::StepWeights& w) {
  if (c.model.lora && !c.model.lora->path.empty()) return w.with_adapter(c.model.lora->path);
  return w.base();
}

namespace {

std::shared_ptr<const explorer::RolloutModel> rollout_model(const config::Config& c,
                                                             std::shared_ptr<const model::Transformer> weights,
                                                             int64_t version) {
  config::InferenceModelConfig r = c.explorer.rollout_model;
  if (r.max_response_tokens <= 0) r.max_response_tokens = c.model.max_response_tokens;
  auto rm = inference_model(r, c.model.model_path, c.model.custom_chat_template, c.model.max_model_len,
                            std::move(weights), version);
  rm->record_history = r.enable_history;
  return rm;
}

// explorer.auxiliary_models: fixed weights (version 0), their own tokenizer files.
std::vector<std::shared_ptr<const explorer::RolloutModel>> auxiliary_models(const config::Config& c) {
  std::vector<std::shared_ptr<const explorer::RolloutModel>> out;
  for (const auto& a : c.explorer.auxiliary_models) {
    auto w = std::make_shared<const model::Transformer>(model::Transformer::load(a.model_path));
    const int64_t len = a.max_model_len > 0 ? a.max_model_len : 0;
    out.push_back(inference_model(a, a.model_path, a.chat_template, len, std::move(w), 0));
    log::info("auxiliary model '", a.name, "': ", a.model_path);
  }
  return out;
}

// A taskset loaded for its workflow: rows need a prompt only when the workflow reads one.
std::shared_ptr<const buffer::Taskset> load_taskset(buffer::TasksetConfig t) {
  t.prompt_required = workflow::workflow_reads_prompt(t.default_workflow_type);
  return std::make_shared<const buffer::Taskset>(buffer::Taskset::load(t));
}

std::unique_ptr<buffer::TasksetScheduler> train_tasks(const config::Config& c) {
  std::vector<std::shared_ptr<const buffer::Taskset>> ts;
  for (const auto& t : c.buffer.explorer_input.tasksets) {
    auto loaded = load_taskset(t);
    log::info("taskset '", t.name, "': ", loaded->size(), " tasks from ", t.path,
              loaded->report().rows_skipped ? strcat(" (", loaded->report().rows_skipped, " bad rows skipped)") : "");
    ts.push_back(std::move(loaded));
  }
  if (ts.empty()) throw ConfigError("config", "buffer.explorer_input.taskset is required in this mode");
  return std::make_unique<buffer::TasksetScheduler>(ts, c.buffer.batch_size, c.buffer.total_epochs, c.buffer.total_steps);
}

std::vector<explorer::EvalSet> eval_sets(const config::Config& c) {
  std::vector<explorer::EvalSet> out;
  for (const auto& t : c.buffer.explorer_input.eval_tasksets) out.push_back({t.name, load_taskset(t)});
  return out;
}

explorer::ExplorerOptions explorer_options(const config::Config& c) {
  explorer::ExplorerOptions o;
  for (const auto& op : c.data_processor.experience_operators) o.experience_operators.push_back({op.name, op.args});
  o.judge = llm_judge_factory(c);
  o.runner.runners = c.explorer.runner_per_model;
  o.runner.max_timeout = c.explorer.max_timeout;
  o.runner.max_retry_times = c.explorer.max_retry_times;
  o.runner.concurrent_repeats = c.explorer.concurrent_mode != "sequential";
  o.runner.dynamic_timeout = c.explorer.dynamic_timeout.enable;
  o.runner.dynamic_ratio = c.explorer.dynamic_timeout.ratio;
  o.runner.dynamic_min_tasks = c.buffer.batch_size;
  o.runner.work_dir = c.config_dir;
  o.runner.log_dir = c.job_dir().empty() ? "" : c.job_dir() + "/log/agents";
  o.sync_blocking = c.synchronizer.sync_style == "fixed";
  o.eval_interval = c.explorer.eval_interval;
  o.eval_on_startup = c.explorer.eval_on_startup;
  o.sync_interval = c.synchronizer.sync_interval;
  o.sync_offset = c.synchronizer.sync_offset;
  o.sync_timeout = c.synchronizer.sync_timeout;
  o.train_batch_size = c.buffer.train_batch_size;
  o.seed = static_cast<uint64_t>(c.explorer.rollout_model.seed);
  o.job_dir = c.job_dir();
  o.detailed_stats = c.monitor.detailed_stats;
  return o;
}

// SFT / DPO experiences from a file buffer (the experience_buffer of sft/dpo, or the expert data set of
// the mix sample strategy).
std::vector<buffer::Experience> dataset_experiences(const config::Config& c, const buffer::StorageConfig& eb, bool dpo,
                                                    const tok::ChatFormatter& chat, const std::vector<int32_t>& eos) {
  buffer::LoadReport lr;
  auto rows = buffer::Taskset::load_rows(eb.path, eb.split, eb.subset_name, eb.format,
                                         dpo ? buffer::DatasetKind::kDpo : buffer::DatasetKind::kSft, false, lr);
  trainer::SftDataOptions so;
  so.format = eb.format;
  so.max_model_len = c.model.max_model_len;
  if (!eos.empty()) so.eos_id = eos[0];
  trainer::SftDataReport rep;
  auto exps = dpo ? trainer::dpo_experiences(rows, so, chat.tokenizer(), &chat, rep)
                  : trainer::sft_experiences(rows, so, chat.tokenizer(), &chat, rep);
  log::info(dpo ? "dpo" : "sft", " data '", eb.name, "': ", rep.kept, " of ", rep.rows, " rows from ", eb.path, " (",
            rep.truncated, " truncated, ", rep.skipped + lr.rows_skipped, " skipped)");
  for (size_t i = 0; i < rep.problems.size() && i < 5; ++i) log::warn("  ", rep.problems[i]);
  return exps;
}

// The model's end-of-sequence ids: config.json's, then the tokenizer files' stop ids.
std::vector<int32_t> model_eos(const model::ModelConfig& mc, const std::vector<int32_t>& stop_ids) {
  std::vector<int32_t> eos;
  for (int64_t id : mc.eos_token_ids) eos.push_back(static_cast<int32_t>(id));
  for (int32_t id : stop_ids) eos.push_back(id);
  return eos;
}

// The model's tokenizer + chat template and its end-of-sequence ids (config only; no weights loaded).
std::shared_ptr<const tok::ChatFormatter> model_chat(const config::Config& c, std::vector<int32_t>* eos) {
  std::vector<int32_t> stop_ids;
  const model::ModelConfig mc = model::load_config(c.model.model_path);
  auto chat = explorer::RolloutModel::load_chat(c.model.model_path, mc.vocab_size, c.model.custom_chat_template, &stop_ids);
  *eos = model_eos(mc, stop_ids);
  return chat;
}

// The trainer's RL batch source: the experience buffer, plus (sample_strategy mix, e.g. CHORD) the
// expert rows of auxiliary_buffers[sft_dataset_name] marked is_expert.
std::unique_ptr<BatchSource> rl_source(const config::Config& c, buffer::ExperienceStorage* storage,
                                       sync::Synchronizer* sync, const std::atomic<bool>* stop,
                                       trainer::PolicyTrainer& tr) {
  const auto& ss = tr.algorithm().sample_strategy();
  const int64_t tbs = c.buffer.train_batch_size;
  const int64_t ebs = ss.expert_batch_size(tbs);
  if (ebs >= tbs)
    throw ConfigError("config", strcat("algorithm.sample_strategy_args.expert_data_ratio leaves no room for rollout "
                                       "experiences in train_batch_size ", tbs));
  auto usual = storage_source(storage, tbs - ebs, c.buffer.trainer_input.experience_buffer.max_read_timeout, sync,
                              ss.max_staleness, stop);
  if (ebs == 0) return usual;
  const auto& aux = c.buffer.trainer_input.auxiliary_buffers;
  auto it = aux.find(ss.sft_dataset_name);
  if (it == aux.end())
    throw ConfigError("config", strcat("sample_strategy mix reads expert data from buffer.trainer_input.auxiliary_buffers.",
                                       ss.sft_dataset_name, ", which is not configured"));
  std::vector<int32_t> eos;
  auto chat = model_chat(c, &eos);
  auto data = dataset_experiences(c, it->second, false, *chat, eos);
  for (auto& e : data) e.info = R"({"is_expert": true})";
  log::info("sample_strategy mix: ", tbs - ebs, " rollout + ", ebs, " expert experiences per train step");
  return mix_source(std::move(usual), dataset_source(std::move(data), ebs, int64_t{1} << 40));
}

void print_eval(const std::string& label, const std::map<std::string, double>& m) {
  for (const auto& [k, v] : m)
    if (k.find("/mean@") != std::string::npos && k.find("time/") == std::string::npos) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " = %.4f", v);
      console::Console::err().line(strcat("[", label, "] ", k, buf));
    }
}

// A resumed role logs the steps from `from_step` on again: drop what an earlier run logged for them.
void drop_superseded(monitor::Monitor& mon, int64_t from_step) {
  const int64_t n = mon.resume(from_step);
  if (n > 0)
    log::info(mon.role(), ": resuming at step ", from_step, "; dropped ", n,
              " metric lines an earlier run logged for steps it will log again");
}

struct TrainerSide {
  std::unique_ptr<trainer::PolicyTrainer> tr;
  int64_t start_step = 0;
  std::string source_state;  // from the checkpoint
};

// trainer.save_hf_dtype: "auto" is the base model's stored dtype (a bf16 model is exported bf16).
tensor::DType hf_export_dtype(const config::Config& c) {
  tensor::DType d = tensor::DType::kF32;
  if (c.trainer.save_hf_dtype == "auto") return model::stored_dtype(c.model.model_path);
  if (!model::dtype_from_torch_name(c.trainer.save_hf_dtype, &d))
    throw ConfigError("launcher", strcat("trainer.save_hf_dtype '", c.trainer.save_hf_dtype,
                                         "': expected auto, float32, bfloat16 or float16"));
  return d;
}

TrainerSide make_trainer(const config::Config& c, int64_t total_steps) {
  TrainerSide t;
  // A LoRA base is frozen: a bf16 checkpoint stays bf16 in memory (half of fp32, same results).
  const std::string& mp = c.model.model_path;
  model::Transformer actor = model::Transformer::load(
      mp, model::HeadKind::kLm, c.model.lora ? model::lossless_storage(mp) : model::WeightStorage::kF32);
  if (actor.weight_storage() == model::WeightStorage::kBF16)
    log::info("trainer: the frozen base's layer weights held in bf16 as stored (",
              format_bytes(static_cast<double>(actor.num_held()) * 2), "; fp32 compute, one layer widened at a time)");
  configure_actor(actor, c);
  trainer::TrainerOptions o = trainer_options(c, total_steps);
  o.reference_storage = model::lossless_storage(mp);  // a full fine-tuning run's reference copy: exact in bf16
  t.tr = std::make_unique<trainer::PolicyTrainer>(std::move(actor), c.algorithm, o);
  if (c.continue_from_checkpoint) {
    if (auto ck = trainer::load_trainer_checkpoint(c.job_dir(), *t.tr)) {
      t.start_step = ck->step;
      const json extra = json::parse(ck->extra_state_json);
      if (extra.contains("source")) t.source_state = extra["source"].dump();
      log::info("trainer: resumed from ", ck->dir, " (step ", ck->step, ")");
    }
  }
  lead_trainer(dist::world(), current_stage(), total_steps, c.model.model_path, *t.tr);
  return t;
}

TrainLoopOptions loop_options(const config::Config& c) {
  TrainLoopOptions lo;
  lo.job_dir = c.job_dir();
  lo.tokenizer_dir = c.model.model_path;
  lo.total_steps = c.trainer.total_steps.value_or(0);
  lo.save_interval = c.trainer.save_interval;
  lo.sync_interval = c.synchronizer.sync_interval;
  lo.max_checkpoints_to_keep = c.trainer.max_checkpoints_to_keep.value_or(0);
  lo.hf_dtype = hf_export_dtype(c);
  return lo;
}

// `both` mode's core budget (core/parallel.h): the explorer's engines, built on this thread, and the
// trainer thread each get their share of the cores while both are busy, all of them while alone.
// Undone when the stage ends.
class CoreShares {
 public:
  CoreShares(const config::Config& c, bool on) : on_(on && c.explorer.threads >= 0 && max_threads() > 1) {
    if (!on_) return;
    const int all = max_threads();
    const int e =
        c.explorer.threads > 0 ? static_cast<int>(std::min<int64_t>(c.explorer.threads, all)) : std::max(1, all / 2);
    const int t = std::max(1, all - e);
    set_role_threads(e, t);
    set_thread_role(Role::kExplorer);
    log::info("cores: explorer ", e, " + trainer ", t, " threads while both are busy, ", all,
              " for either alone (explorer.threads)");
  }
  ~CoreShares() {
    if (!on_) return;
    set_role_threads(0, 0);
    set_thread_role(Role::kNone);
  }
  CoreShares(const CoreShares&) = delete;
  CoreShares& operator=(const CoreShares&) = delete;

 private:
  bool on_;
};

StageSummary run_both(const config::Config& c, const std::atomic<bool>* stop, bool with_explorer, bool with_trainer) {
  StageSummary s;
  const CoreShares shares(c, with_explorer && with_trainer);
  // Several explorer processes (issue 17): an explore-only process with its own explorer.name shares
  // the explore steps with the others through leases in the buffer's database.
  const bool shared_explorer = with_explorer && !with_trainer && c.explorer.name != "explorer";
  // Their metrics share the role "explorer": each explore step is logged once, by the explorer that ran it.
  monitor::Monitor emon(c.job_dir(), "explorer", c.monitor.monitor_type);
  monitor::Monitor tmon(c.job_dir(), "trainer", c.monitor.monitor_type);
  const bool two_process = !(with_explorer && with_trainer);
  // Explore mode's weights: the base (or base + adapter) at start, each synced step after (one base
  // shared by both, so a LoRA run's engine packs it once).
  auto step_weights = std::make_shared<model::StepWeights>(c.model.model_path);
  std::unique_ptr<sync::Synchronizer> sync =
      two_process ? sync::make_checkpoint_sync(c.job_dir(), c.model.model_path, 1.0, step_weights)
                  : sync::make_memory_sync();
  const auto& ebc = c.buffer.trainer_input.experience_buffer;
  if (!ebc.path.empty() && ebc.storage_type != "queue" && !buffer::is_postgres_url(ebc.path))
    file::make_dirs(fs::path(buffer::sqlite_path_from_url(ebc.path)).parent_path().string());
  auto storage = buffer::open_storage(ebc);

  std::unique_ptr<buffer::TasksetScheduler> tasks;
  if (with_explorer) tasks = train_tasks(c);
  const int64_t explore_steps = tasks ? tasks->max_steps() : 0;
  TrainerSide ts;
  if (with_trainer) {
    ts = make_trainer(c, planned_train_steps(c, explore_steps, std::nullopt));
    drop_superseded(tmon, ts.start_step + 1);
    if (!ts.source_state.empty()) {
      // restored by the trainer's batch source (rl_source) below
    } else if (c.continue_from_checkpoint && (ebc.storage_type == "sql" || ebc.storage_type == "sqlite")) {
      // No checkpoint yet: leases this reader (same owner name) holds in the persistent buffer belong
      // to a run killed before its first save; give them back now instead of after lease_timeout.
      storage->load_state(storage->state());
    }
  }

  // Initial rollout weights: the trainer's (resumed) weights, or in explore mode the newest synced ones.
  std::shared_ptr<const model::Transformer> w0;
  int64_t v0 = 0;
  if (with_trainer) {
    w0 = ts.tr->snapshot();
    v0 = ts.start_step;
  } else if (with_explorer) {
    const int64_t v = sync->latest_version();
    if (c.continue_from_checkpoint && v > 0) {
      w0 = step_weights->load(file::join(c.job_dir(), strcat("global_step_", v)));
      v0 = v;
    } else {
      w0 = initial_rollout_weights(c, *step_weights);
    }
  }
  std::unique_ptr<algo::Algorithm> ealg;
  std::shared_ptr<const explorer::RolloutModel> rm;
  std::unique_ptr<explorer::Explorer> ex;
  std::unique_ptr<buffer::StepClaims> claims;
  if (with_explorer) {
    ealg = std::make_unique<algo::Algorithm>(c.algorithm);
    rm = rollout_model(c, w0, v0);
    ex = std::make_unique<explorer::Explorer>(explorer_options(c), rm, std::move(tasks), eval_sets(c), ealg.get(),
                                              storage.get(), &emon, sync.get(), stop);
    ex->set_auxiliary_models(auxiliary_models(c));
    if (shared_explorer) {
      claims = buffer::open_step_claims(ebc);
      ex->share_steps(claims.get(), c.explorer.name, ebc.lease_timeout);
    } else {
      if (c.continue_from_checkpoint) ex->restore();
      drop_superseded(emon, ex->step() == 0 ? 0 : ex->step() + 1);  // step 0: the startup eval runs again
    }
    sync->set_state("explorer", sync::PeerState::kRunning);
  }

  std::string trainer_error;
  std::exception_ptr trainer_exc;  // rethrown as is (its message already names the component)
  TrainLoopResult tres;
  std::thread trainer_thread;
  auto train = [&] {
    // Its kernels run on the trainer's share of the cores while the explorer's engine is busy.
    if (with_explorer) set_thread_role(Role::kTrainer);
    try {
      sync->set_state("trainer", sync::PeerState::kRunning);
      auto src = rl_source(c, storage.get(), sync.get(), stop, *ts.tr);
      if (!ts.source_state.empty()) src->load_state(ts.source_state);
      TrainLoopOptions lo = loop_options(c);
      if (c.synchronizer.sync_style == "fixed")
        lo.expected_lag = c.synchronizer.sync_interval - 1 + c.synchronizer.sync_offset;
      tres = train_loop(*ts.tr, *src, lo, ts.start_step, &tmon, sync.get(), stop);
      sync->set_state("trainer", sync::PeerState::kFinished);
    } catch (const std::exception& e) {
      trainer_error = e.what();
      trainer_exc = std::current_exception();
      sync->set_state("trainer", sync::PeerState::kFailed, trainer_error);
    }
  };
  if (with_trainer && with_explorer) trainer_thread = std::thread(train);

  explorer::ExplorerSummary es;
  if (with_explorer) {
    try {
      es = ex->run();
    } catch (const std::exception& e) {
      sync->set_state("explorer", sync::PeerState::kFailed, e.what());
      if (trainer_thread.joinable()) trainer_thread.join();
      throw;
    }
    storage->close();
    sync->set_state("explorer", es.stopped ? sync::PeerState::kFailed : sync::PeerState::kFinished,
                    es.stopped ? "stopped by the user" : "");
  }
  if (trainer_thread.joinable()) trainer_thread.join();
  if (with_trainer && !with_explorer) train();
  if (trainer_exc) std::rethrow_exception(trainer_exc);
  // A train process whose explorer finished without writing anything trained nothing: not a success.
  if (with_trainer && !with_explorer && !tres.stopped && tres.steps == 0)
    throw Error("trainer", strcat("no step trained: the explorer finished without writing any experience to ",
                                  storage->describe(), " (its log says why); nothing was saved"));
  if (with_explorer && !with_trainer && !es.trainer_error.empty())
    throw Error("explorer", strcat("the trainer process ended abnormally (", es.trainer_error, ") after ", es.steps,
                                   " explore steps; start the trainer again, then this explorer, to resume"));

  // A run in which every task failed trained nothing: an error naming the failures, not a success. A
  // run where some task succeeded ends normally (the failures are in the log and the metrics).
  if (with_explorer && !es.stopped && es.tasks_ok == 0 && es.tasks_failed > 0 && tres.steps == 0)
    throw Error("explorer", strcat("every task failed (", es.tasks_failed, " tasks over ", es.steps, " explore steps; ",
                                   failure_counts(es.failures), "): no experience was written and no step trained; ",
                                   "the warnings above give each task's error"));
  s.explore_steps = es.steps;
  s.train_steps = tres.steps;
  s.stopped = es.stopped || tres.stopped;
  if (with_trainer && tres.steps > 0) s.last_checkpoint = file::join(tres.last_checkpoint, "huggingface");
  s.evals = es.evals;
  // Final evaluation of the trained weights (trinity extension; Trinity evaluates only every eval_interval).
  if (with_explorer && with_trainer && !s.stopped && !c.buffer.explorer_input.eval_tasksets.empty() && tres.steps > 0) {
    if (rm->engine->model_version() != tres.steps) rm->set_weights(ts.tr->snapshot(), tres.steps);
    const bool already = !es.evals.empty() && es.evals.back().first == tres.steps;
    if (!already) {
      explorer::Metrics m = ex->evaluate(std::max(es.steps, tres.steps));
      if (stop && stop->load())
        s.stopped = true;  // interrupted: nothing evaluated
      else
        s.evals.push_back({tres.steps, std::move(m)});
    }
  }
  return s;
}

StageSummary run_train_dataset(const config::Config& c, const std::atomic<bool>* stop) {
  StageSummary s;
  monitor::Monitor tmon(c.job_dir(), "trainer", c.monitor.monitor_type);
  std::vector<int32_t> eos;
  auto chat = model_chat(c, &eos);
  auto data = dataset_experiences(c, c.buffer.trainer_input.experience_buffer, c.schema_type == "dpo", *chat, eos);
  auto src = dataset_source(std::move(data), c.buffer.train_batch_size, c.buffer.total_epochs, c.buffer.total_steps);
  TrainerSide ts = make_trainer(c, planned_train_steps(c, 0, src->total_steps()));
  drop_superseded(tmon, ts.start_step + 1);
  if (!ts.source_state.empty()) src->load_state(ts.source_state);
  TrainLoopOptions lo = loop_options(c);
  TrainLoopResult r = train_loop(*ts.tr, *src, lo, ts.start_step, &tmon, nullptr, stop);
  s.train_steps = r.steps;
  s.stopped = r.stopped;
  if (r.steps > 0) s.last_checkpoint = file::join(r.last_checkpoint, "huggingface");
  return s;
}

// model.external_model: every attempt's rollout client is an ExternalClient of the API the
// environment names (no local weights). Sets *name to the API's model name.
explorer::RolloutClientFactory external_clients(const config::Config& c, std::string* name) {
  const auto& em = c.model.external_model;
  explorer::ExternalModelOptions o = explorer::ExternalModel::options_from_env(em.base_url_env, em.api_key_env);
  o.model_name = em.model_name.empty() ? c.model.model_path : em.model_name;
  // Sampling defaults as the local rollout model's (tasks' rollout_args come first).
  const config::InferenceModelConfig& r = c.explorer.rollout_model;
  o.defaults.temperature = r.temperature;
  o.defaults.max_tokens = r.max_response_tokens > 0 ? r.max_response_tokens : c.model.max_response_tokens;
  o.timeout_s = c.explorer.max_timeout;
  o.max_model_len = c.model.max_model_len;
  // model_path serves only as the name, or as a local folder whose tokenizer workflows may use.
  const std::string tok_dir = fs::is_directory(c.model.model_path) ? c.model.model_path : "";
  auto m = std::make_shared<const explorer::ExternalModel>(std::move(o), tok_dir);
  *name = m->options().model_name;
  log::info("bench: external model '", *name, "' at ", m->chat_url(), " (tokenizer: ", m->tokenizer_origin(), ")");
  return [m](const buffer::Task& task, uint64_t) {
    auto cl = std::make_shared<explorer::ExternalClient>(m, &task);
    return explorer::RolloutClient{cl, [cl] { cl->cancel(); }};
  };
}

StageSummary run_bench(const config::Config& c, const std::atomic<bool>* stop) {
  StageSummary s;
  if (c.buffer.explorer_input.eval_tasksets.empty())
    throw ConfigError("config", "bench mode needs buffer.explorer_input.eval_tasksets");
  monitor::Monitor mon(c.job_dir(), "bench", c.monitor.monitor_type);
  drop_superseded(mon, 0);  // bench evaluates everything again
  auto opts = explorer_options(c);
  std::shared_ptr<const explorer::RolloutModel> rm;
  model::StepWeights weights(c.model.model_path);
  const bool external = c.model.external_model.enable;
  if (external) {
    opts.rollout_client = external_clients(c, &s.external_model);
  } else {
    rm = rollout_model(c, initial_rollout_weights(c, weights), 0);
  }
  explorer::Explorer ex(opts, rm, nullptr, eval_sets(c), nullptr, nullptr, &mon, nullptr, stop);
  ex.set_auxiliary_models(auxiliary_models(c));
  // An external model is evaluated once; the job dir's checkpoints are local weights it does not have.
  std::vector<std::pair<int64_t, std::string>> ckpts;
  if (!external && fs::exists(c.job_dir()))
    for (const auto& e : fs::directory_iterator(c.job_dir())) {
      const std::string n = e.path().filename().string();
      if (n.rfind("global_step_", 0) != 0 || n.find(".tmp") != std::string::npos) continue;
      // Each step's HF export, or with LoRA the base + the step's adapter (sync-only steps have only that).
      const std::string d = e.path().string();
      if (model::is_adapter_dir(model::step_adapter_dir(d)) || file::exists(file::join(d, "huggingface/config.json")))
        ckpts.push_back({std::stoll(n.substr(12)), d});
    }
  std::sort(ckpts.begin(), ckpts.end());
  if (c.explorer.bench_on_latest_checkpoint && ckpts.size() > 1) ckpts.erase(ckpts.begin(), ckpts.end() - 1);
  // A stop request interrupts an evaluation (Explorer::evaluate cancels its tasks); nothing is reported for it.
  auto bench = [&](int64_t step, const std::string& label) {
    explorer::Metrics m = ex.evaluate(step, "bench");
    if (stop && stop->load()) return false;
    s.evals.push_back({step, std::move(m)});
    print_eval(label, s.evals.back().second);
    return true;
  };
  if (external) {
    if (!bench(0, strcat("bench ", s.external_model))) s.stopped = true;
  } else if ((c.explorer.eval_on_startup || ckpts.empty()) && !bench(0, "bench base")) {
    s.stopped = true;
  }
  for (const auto& [step, dir] : ckpts) {
    if (s.stopped || (stop && stop->load())) break;
    rm->set_weights(model::is_adapter_dir(model::step_adapter_dir(dir))
                        ? weights.load(dir)
                        : model::load_rollout_weights(file::join(dir, "huggingface")),
                    step);
    if (!bench(step, strcat("bench step ", step))) s.stopped = true;
  }
  if (stop && stop->load()) s.stopped = true;
  return s;
}

std::string timestamp() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y%m%d%H%M%S", &tm);
  return buf;
}

}  // namespace

std::shared_ptr<const explorer::RolloutModel> make_rollout_model(const config::Config& cfg,
                                                                 std::shared_ptr<const model::Transformer> weights,
                                                                 int64_t version) {
  return rollout_model(cfg, std::move(weights), version);
}

// Kernel threads: a model of a few million parameters gains nothing from splitting its small GEMMs
// over cores, and in `both` mode the explorer and the trainer already run side by side (with a
// spinning OpenMP team each they slow each other down many times over), so small models run one
// thread per kernel. TRINITY_THREADS / OMP_NUM_THREADS override.
void choose_threads(const config::Config& c) {
  if (choose_rank_threads()) return;  // under mpirun: the cores divided by this machine's ranks
  if (std::getenv("TRINITY_THREADS") || std::getenv("OMP_NUM_THREADS")) return;
  if (c.model.external_model.enable) return;  // model_path is an API model name, not weights
  const model::ModelConfig mc = model::load_config(c.model.model_path);
  if (mc.num_params() < 5'000'000) {
    set_num_threads(1);
    tensor::blas_set_threads(1);
    log::info("model has ", mc.num_params(), " parameters: 1 thread per kernel (set TRINITY_THREADS to change)");
  }
}

config::Config resolve_hub_models(const config::Config& cfg) {
  config::Config c = cfg;
  // With model.external_model, model_path names the API's model (or a local folder for its tokenizer):
  // nothing to download, and bench does not train (no critic).
  if (!c.model.external_model.enable) {
    const std::string model_id = c.model.model_path;
    c.model.model_path = hub::resolve_model_dir(model_id, "model.model_path");
    c.model.critic_model_path = c.model.critic_model_path == model_id
                                    ? c.model.model_path
                                    : hub::resolve_model_dir(c.model.critic_model_path, "model.critic_model_path");
  }
  for (size_t i = 0; i < c.explorer.auxiliary_models.size(); ++i) {
    auto& a = c.explorer.auxiliary_models[i];
    a.model_path = hub::resolve_model_dir(a.model_path, strcat("explorer.auxiliary_models[", i, "].model_path"));
  }
  return c;
}

namespace {
StageSummary run_mode(const config::Config& c, const std::atomic<bool>* stop);
}  // namespace

StageSummary run_stage(const config::Config& cfg, const std::atomic<bool>* stop, const RunOrigin* origin) {
  config::Config c = resolve_hub_models(cfg);
  choose_threads(c);
  if (c.explorer.max_repeat_times_per_runner)
    log::warn("explorer.max_repeat_times_per_runner is not implemented: a task's repeats run in one runner "
              "(explorer.concurrent_mode: multi-threading runs them side by side)");
  if (c.explorer.runner_state_report_interval > 0)
    log::warn("explorer.runner_state_report_interval is not implemented; failures are logged as they happen");
  // Runners are threads of this process: explorer.env_vars apply to the whole process.
  for (const auto& [k, v] : c.explorer.env_vars) setenv(k.c_str(), v.c_str(), 1);
  if (!c.continue_from_checkpoint && c.mode != "bench" && fs::exists(c.job_dir()) && !fs::is_empty(c.job_dir())) {
    const std::string old = c.job_dir();
    c.name += "_" + timestamp();
    log::warn("continue_from_checkpoint is false and ", old, " is not empty: this run is named '", c.name, "'");
  }
  // The task pipeline writes the taskset this stage reads (reused when already processed).
  if (c.data_processor.task_pipeline && (c.mode == "both" || c.mode == "explore" || c.mode == "train"))
    run_task_pipeline(c);
  file::make_dirs(c.job_dir());
  if (const int64_t n = file::remove_stale_temporaries(c.job_dir()))
    log::info("removed ", n, " temporary file(s) left in ", c.job_dir(), " by a killed run");
  log::info("stage '", c.name, "': mode ", c.mode, ", algorithm ", c.algorithm.algorithm_type, ", job dir ", c.job_dir());
  Timer timer;
  RunStatus status;
  status.mode = c.mode, status.project = c.project, status.name = c.name;
  if (const auto slash = c.name.find('/'); slash != std::string::npos)
    status.name = c.name.substr(0, slash), status.stage = c.name.substr(slash + 1);
  if (origin) status.config = origin->config_path, status.sets = origin->sets, status.cwd = origin->cwd;
  if (origin) status.version = origin->version;
  RunStatusWriter status_file(c.job_dir(), status);
  StageSummary s;
  try {
    s = run_mode(c, stop);
  } catch (const std::exception& e) {
    status_file.finish("failed", e.what());
    throw;
  }
  status_file.finish(s.stopped ? "stopped" : "finished");
  s.name = c.name;
  s.mode = c.mode;
  s.job_dir = c.job_dir();
  s.seconds = timer.seconds();
  return s;
}

namespace {

StageSummary run_mode(const config::Config& c, const std::atomic<bool>* stop) {
  StageSummary s;
  if (c.mode == "both")
    s = run_both(c, stop, true, true);
  else if (c.mode == "explore")
    s = run_both(c, stop, true, false);
  else if (c.mode == "train" && (c.schema_type == "sft" || c.schema_type == "dpo"))
    s = run_train_dataset(c, stop);
  else if (c.mode == "train")
    s = run_both(c, stop, false, true);
  else if (c.mode == "bench")
    s = run_bench(c, stop);
  else if (c.mode == "serve")
    s = run_serve(c, stop);
  else
    throw UnsupportedError(
        "launcher", strcat("mode '", c.mode, "' is not supported by `trinity run` (use `trinity serve` for serving)"));
  return s;
}

}  // namespace

std::vector<StageSummary> run(const config::LoadResult& loaded, const std::atomic<bool>* stop,
                              const RunOrigin* origin) {
  std::vector<StageSummary> out;
  dist::Comm& comm = dist::world();
  if (comm.size() > 1)
    log::info("data parallel: rank 0 of ", comm.size(), " runs the job; ranks 1..", comm.size() - 1,
              " join each trainer (mode train or both) and wait otherwise");
  if (loaded.stages.empty()) {
    set_current_stage(0);
    out.push_back(run_stage(loaded.config, stop, origin));
    lead_done(comm);
    return out;
  }
  const config::Config& root = loaded.config;
  const std::string meta = file::join(root.job_dir(), "stage_meta.json");
  json state = json::object();
  if (root.continue_from_checkpoint && file::exists(meta)) state = json::parse(file::read_all(meta));
  std::string prev_ckpt;
  for (size_t i = 0; i < loaded.stages.size(); ++i) {
    config::Config c = loaded.stages[i];
    if (!prev_ckpt.empty()) c = config::with_model_path(c, prev_ckpt);
    const std::string key = c.name;
    if (state.contains("done") && state["done"].contains(key)) {
      prev_ckpt = state["done"][key].get<std::string>();
      log::info("stage '", key, "' already finished (", prev_ckpt, "); skipping");
      continue;
    }
    set_current_stage(static_cast<int>(i));
    StageSummary s = run_stage(c, stop, origin);
    out.push_back(s);
    if (s.stopped) break;
    if (!s.last_checkpoint.empty()) prev_ckpt = s.last_checkpoint;
    state["latest_stage"] = i;
    state["done"][key] = prev_ckpt;
    file::make_dirs(root.job_dir());
    file::write_atomic(meta, state.dump(1));
  }
  lead_done(comm);
  return out;
}

std::vector<std::shared_ptr<const explorer::RolloutModel>> make_auxiliary_models(const config::Config& cfg) {
  return auxiliary_models(cfg);
}

}  // namespace trinity::launcher
