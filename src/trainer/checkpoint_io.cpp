// Trainer checkpoint save/load/prune (layout and atomicity: checkpoint_io.h).
#include "trainer/checkpoint_io.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "model/checkpoint_dtype.h"
#include "model/lora.h"
#include "model/safetensors.h"
#include "model/step_weights.h"

namespace trinity::trainer {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kMarker = ".full_checkpoint";
constexpr const char* kLatestCkpt = "latest_checkpointed_iteration.txt";
constexpr const char* kLatestState = "latest_state_dict_iteration.txt";

void fsync_path(const fs::path& p, bool dir) {
  const int fd = ::open(p.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) throw IoError("checkpoint", strcat("cannot open '", p.string(), "' to sync: ", std::strerror(errno)));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw IoError("checkpoint", strcat("cannot fsync '", p.string(), "': ", std::strerror(errno)));
}

void fsync_tree(const fs::path& root) {
  for (const auto& e : fs::recursive_directory_iterator(root)) fsync_path(e.path(), e.is_directory());
  fsync_path(root, true);
}

// global_step_<N> -> N; -1 for other names.
int64_t step_of(const std::string& name) {
  static const std::string p = "global_step_";
  if (name.rfind(p, 0) != 0 || name.size() == p.size()) return -1;
  int64_t n = 0;
  for (size_t i = p.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

// Removes global_step_*.tmp-<pid> dirs left by dead processes (and our own).
void remove_stale_tmp(const std::string& job_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(job_dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto pos = name.find(".tmp-");
    if (name.rfind("global_step_", 0) != 0 || pos == std::string::npos) continue;
    const long pid = std::strtol(name.c_str() + pos + 5, nullptr, 10);
    if (pid > 0 && pid != ::getpid() && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)) continue;
    fs::remove_all(e.path(), ec);
  }
}

tensor::Tensor flat_view(std::vector<float>& v) {
  return tensor::Tensor::view(tensor::DType::kF32, {static_cast<int64_t>(v.size())}, v.data(), nullptr);
}

json schedule_json(const LrSchedule& s) {
  return {{"type", s.type}, {"warmup_steps", s.warmup_steps}, {"total_steps", s.total_steps},
          {"min_lr_ratio", s.min_lr_ratio}};
}

// Writes `write(tmp_dir)` into <job>/<final_name> atomically (tmp dir + fsync + rename).
template <class F>
void write_dir_atomic(const std::string& job_dir, const std::string& final_name, F&& write) {
  file::make_dirs(job_dir);
  remove_stale_tmp(job_dir);
  const fs::path final_dir = fs::path(job_dir) / final_name;
  const fs::path tmp = fs::path(job_dir) / strcat(final_name, ".tmp-", ::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    fs::create_directories(tmp);
    write(tmp.string());
    fsync_tree(tmp);
    if (fs::exists(final_dir)) {  // re-save of the same step: move the old one aside first
      const fs::path old = fs::path(job_dir) / strcat(final_name, ".tmp-", ::getpid(), "-old");
      fs::remove_all(old, ec);
      fs::rename(final_dir, old);
      fs::rename(tmp, final_dir);
      fs::remove_all(old, ec);
    } else {
      fs::rename(tmp, final_dir);
    }
    fsync_path(job_dir, true);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

void copy_f32(model::Transformer& dst, const model::Transformer& src, const std::string& what) {
  if (dst.num_params() != src.num_params() || dst.param_specs().size() != src.param_specs().size())
    throw ValueError("checkpoint", strcat(what, ": checkpoint has ", src.num_params(),
                                          " parameters, the trainer's model ", dst.num_params(),
                                          " (different model config?)"));
  std::memcpy(dst.params(), src.params(), sizeof(float) * static_cast<size_t>(src.num_params()));
}

void load_moments(const model::SafetensorsFile& f, const std::string& prefix, AdamW& opt) {
  for (auto [name, vec] : {std::pair{"exp_avg", &opt.m()}, std::pair{"exp_avg_sq", &opt.v()}}) {
    const auto& t = f.get(prefix + name);
    if (t.dtype() != tensor::DType::kF32 || t.numel() != static_cast<int64_t>(vec->size()))
      throw IoError("checkpoint", strcat(f.path(), ": ", prefix, name, " has ", t.numel(), " values, expected ",
                                         vec->size(), " fp32"));
    std::memcpy(vec->data(), t.f32(), sizeof(float) * vec->size());
  }
}

// With LoRA: <step>/actor/lora_adapter (Trinity's place for it).
std::string adapter_dir(const std::string& step_dir) {
  return model::step_adapter_dir(step_dir);
}

// Without LoRA: the HF export, plus the exact fp32 weights in actor/ when the export is rounded
// (full checkpoints). With LoRA the adapter is the exact state (the base is the run's model, frozen):
// a full checkpoint writes it and the merged HF export (a plain model users load as is), a sync
// writes only the adapter (model::StepWeights loads base + adapter), never a merged fp32 copy.
void save_actor(const model::Transformer& actor, const std::string& dir, const model::SaveOptions& so,
                const std::string& base_model, bool full) {
  if (!actor.has_lora()) {
    actor.save(file::join(dir, "huggingface"), so);
    if (full && so.dtype != tensor::DType::kF32) actor.save(file::join(dir, "actor"));
    return;
  }
  if (full) model::save_merged(actor, file::join(dir, "huggingface"), so);  // no merged copy in memory
  file::make_dirs(file::join(dir, "actor"));
  model::save_adapter(actor, adapter_dir(dir), base_model);
}

void load_adapter_weights(model::Transformer& actor, const std::string& step_dir) {
  const std::string ad = adapter_dir(step_dir);
  if (!actor.has_lora()) {
    if (model::is_adapter_dir(ad))
      throw ValueError("checkpoint",
                       strcat(step_dir, ": saved with LoRA (", ad, "), but the config has no model.lora_configs"));
    return;
  }
  if (!model::is_adapter_dir(ad))
    throw ValueError("checkpoint", strcat(step_dir, ": no LoRA adapter at ", ad,
                                          ", but the config has model.lora_configs (saved without LoRA?)"));
  const model::LoraConfig saved = model::read_adapter_config(ad);
  const model::LoraConfig& now = actor.lora_config();
  if (saved.rank != now.rank || saved.targets() != now.targets() || saved.alpha != now.alpha)
    throw ValueError("checkpoint", strcat(ad, ": adapter rank ", saved.rank, " alpha ", saved.alpha,
                                          " differs from the config's lora_rank ", now.rank, " lora_alpha ", now.alpha,
                                          " (or its target_modules do)"));
  const auto f = model::SafetensorsFile::open(file::join(ad, model::kAdapterWeightsFile));
  for (const auto& spec : actor.lora_specs()) {
    const auto& t = f.get(spec.name);
    if (t.dtype() != tensor::DType::kF32 || t.shape() != spec.shape)
      throw IoError("checkpoint", strcat(f.path(), ": ", spec.name, " is not fp32 of the adapter's shape"));
    std::memcpy(actor.lora_param(spec.name), t.f32(), static_cast<size_t>(t.nbytes()));
  }
}

}  // namespace

std::string global_step_dir(const std::string& job_dir, int64_t step) {
  return file::join(job_dir, strcat("global_step_", step));
}

std::optional<int64_t> read_iteration(const std::string& job_dir, const std::string& name) {
  const std::string p = file::join(job_dir, name);
  if (!file::exists(p)) return std::nullopt;
  const std::string s = file::read_all(p);
  try {
    size_t used = 0;
    const long long n = std::stoll(s, &used);
    return static_cast<int64_t>(n);
  } catch (const std::exception&) {
    throw IoError("checkpoint", strcat(p, ": expected a step number, got '", s, "'"));
  }
}

std::string save_trainer_checkpoint(const std::string& job_dir, int64_t step, PolicyTrainer& trainer,
                                    const std::string& extra_state_json, const CheckpointOptions& opts) {
  const json extra = json::parse(extra_state_json, nullptr, false);
  if (extra.is_discarded())
    throw ValueError("checkpoint", strcat("extra_state_json is not valid JSON: '", extra_state_json.substr(0, 80), "'"));
  const std::string name = strcat("global_step_", step);
  write_dir_atomic(job_dir, name, [&](const std::string& dir) {
    model::SaveOptions so;
    so.copy_tokenizer_from = opts.tokenizer_dir;
    so.dtype = opts.hf_dtype;
    save_actor(trainer.actor(), dir, so, opts.tokenizer_dir, true);
    const std::string fp32_dir = model::exact_weights_dir(dir);
    if (trainer.critic()) {
      // model::save_checkpoint wants an LM head; the value model is written directly (same config.json,
      // parameters under their HF names incl. score.weight / score.bias), loadable with HeadKind::kValue.
      const std::string cdir = file::join(dir, "critic");
      file::make_dirs(cdir);
      file::write_atomic(file::join(cdir, "config.json"), file::read_all(file::join(fp32_dir, "config.json")));
      const auto views = trainer.critic()->param_tensors();
      std::vector<model::NamedTensor> named;
      for (size_t i = 0; i < views.size(); ++i) named.push_back({trainer.critic()->param_specs()[i].name, &views[i]});
      model::write_safetensors(file::join(cdir, "model.safetensors"), named, tensor::DType::kF32);
    }
    std::vector<tensor::Tensor> ts;
    std::vector<std::string> names;
    auto add = [&](const std::string& prefix, AdamW& o) {
      ts.push_back(flat_view(o.m())), names.push_back(prefix + "exp_avg");
      ts.push_back(flat_view(o.v())), names.push_back(prefix + "exp_avg_sq");
    };
    add("actor.", trainer.optimizer());
    if (trainer.critic_optimizer()) add("critic.", *trainer.critic_optimizer());
    std::vector<model::NamedTensor> nts;
    for (size_t i = 0; i < ts.size(); ++i) nts.push_back({names[i], &ts[i]});
    model::write_safetensors(file::join(dir, "optimizer.safetensors"), nts, tensor::DType::kF32);
    auto& alg = trainer.algorithm();
    json st = {{"format_version", 1},
               {"step", step},
               {"actor_optimizer_steps", trainer.optimizer().steps()},
               {"lr", trainer.options().optim.lr},
               {"lr_schedule", schedule_json(trainer.options().schedule)},
               {"algorithm_type", alg.type()},
               {"kl_penalty_coef", alg.kl_penalty().coef()},
               {"kl_loss_coef", alg.kl_loss().coef()},
               {"seed", trainer.options().seed},
               {"extra_state", extra}};
    if (trainer.critic_optimizer()) {
      st["critic_optimizer_steps"] = trainer.critic_optimizer()->steps();
      st["critic_lr_schedule"] = schedule_json(trainer.options().critic_schedule);
    }
    file::write_atomic(file::join(dir, "trainer_state.json"), st.dump(2));
    file::write_atomic(file::join(dir, kMarker), "");
  });
  file::write_atomic(file::join(job_dir, kLatestCkpt), std::to_string(step));
  file::write_atomic(file::join(job_dir, kLatestState), std::to_string(step));
  if (opts.max_checkpoints_to_keep > 0) prune_checkpoints(job_dir, opts.max_checkpoints_to_keep);
  return global_step_dir(job_dir, step);
}

std::optional<TrainerCheckpoint> load_trainer_checkpoint(const std::string& job_dir, PolicyTrainer& trainer) {
  const auto n = read_iteration(job_dir, kLatestCkpt);
  if (!n) return std::nullopt;
  TrainerCheckpoint ck;
  ck.step = *n;
  ck.dir = global_step_dir(job_dir, *n);
  if (!file::exists(file::join(ck.dir, kMarker)))
    throw IoError("checkpoint", strcat(ck.dir, ": not a full checkpoint (no ", kMarker, "), but ", kLatestCkpt,
                                       " names it"));
  const json st = json::parse(file::read_all(file::join(ck.dir, "trainer_state.json")), nullptr, false);
  if (st.is_discarded() || !st.is_object())
    throw IoError("checkpoint", strcat(ck.dir, "/trainer_state.json is not a JSON object"));
  auto& alg = trainer.algorithm();
  if (st.value("algorithm_type", alg.type()) != alg.type())
    throw ValueError("checkpoint", strcat(ck.dir, ": saved by algorithm ", st.value("algorithm_type", std::string()),
                                          ", resuming with ", alg.type()));
  const bool has_critic = file::is_dir(file::join(ck.dir, "critic"));
  if (has_critic != (trainer.critic() != nullptr))
    throw ValueError("checkpoint", strcat(ck.dir, has_critic ? ": has a critic but the trainer uses none"
                                                             : ": has no critic/ but the trainer needs one"));
  if (trainer.actor().has_lora() || model::is_adapter_dir(adapter_dir(ck.dir)))
    load_adapter_weights(trainer.actor(), ck.dir);  // the base weights are the model's, unchanged
  else
    copy_f32(trainer.actor(), model::Transformer::load(model::exact_weights_dir(ck.dir)), "actor");
  if (trainer.critic())
    copy_f32(*trainer.critic(), model::Transformer::load(file::join(ck.dir, "critic"), model::HeadKind::kValue),
             "critic");
  const auto opt = model::SafetensorsFile::open(file::join(ck.dir, "optimizer.safetensors"));
  load_moments(opt, "actor.", trainer.optimizer());
  trainer.optimizer().set_steps(st.at("actor_optimizer_steps").get<int64_t>());
  if (trainer.critic_optimizer()) {
    load_moments(opt, "critic.", *trainer.critic_optimizer());
    trainer.critic_optimizer()->set_steps(st.at("critic_optimizer_steps").get<int64_t>());
  }
  alg.kl_penalty().set_coef(st.at("kl_penalty_coef").get<double>());
  alg.kl_loss().set_coef(st.at("kl_loss_coef").get<double>());
  trainer.set_last_step(ck.step);
  ck.extra_state_json = st.contains("extra_state") ? st["extra_state"].dump() : "{}";
  return ck;
}

std::string save_sync_weights(const std::string& job_dir, int64_t step, const PolicyTrainer& trainer,
                              const std::string& tokenizer_dir) {
  const std::string dir = global_step_dir(job_dir, step);
  if (!file::exists(file::join(dir, kMarker))) {
    write_dir_atomic(job_dir, strcat("global_step_", step), [&](const std::string& tmp) {
      model::SaveOptions so;
      so.copy_tokenizer_from = tokenizer_dir;
      save_actor(trainer.actor(), tmp, so, tokenizer_dir, false);
    });
  }
  file::write_atomic(file::join(job_dir, kLatestState), std::to_string(step));
  return trainer.actor().has_lora() ? adapter_dir(dir) : model::exact_weights_dir(dir);
}

int64_t prune_checkpoints(const std::string& job_dir, int64_t keep) {
  if (keep <= 0) return 0;
  std::vector<std::pair<int64_t, fs::path>> full;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(job_dir, ec)) {
    const int64_t n = step_of(e.path().filename().string());
    if (n >= 0 && e.is_directory() && fs::exists(e.path() / kMarker)) full.emplace_back(n, e.path());
  }
  std::sort(full.begin(), full.end());
  int64_t removed = 0;
  for (size_t i = 0; i + static_cast<size_t>(keep) < full.size(); ++i) {
    // Drop the marker first: a crash mid-removal leaves a non-resumable (sync-like) dir, never a
    // "full" one with missing files.
    fs::remove(full[i].second / kMarker, ec);
    fs::remove_all(full[i].second, ec);
    if (ec) log::warn("checkpoint: cannot remove ", full[i].second.string(), ": ", ec.message());
    ++removed;
  }
  return removed;
}

}  // namespace trinity::trainer
