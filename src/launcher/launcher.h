// Launcher: runs a loaded config (trinity-rft.md §6.1): every stage in order (stage_meta.json
// records finished stages, so a resumed run skips them; stage i+1 starts from stage i's final
// checkpoint), each in its mode:
//   both     explorer (main thread) + trainer (thread) in one process, memory sync
//   explore  explorer only, weights from the trainer process through checkpoint sync
//   train    trainer only: RL from a sqlite buffer filled by an explorer process, or SFT/DPO from files
//   bench    evaluate the base model and every saved checkpoint on the eval tasksets (with
//            model.external_model: an OpenAI-compatible API, once, instead of local weights)
// Ctrl-C sets the stop flag: the trainer finishes its step and saves a resumable checkpoint, the
// explorer drops unfinished steps; `trinity run` again resumes (continue_from_checkpoint).
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include <memory>

#include "config/config.h"
#include "launcher/run_status.h"

namespace trinity::explorer {
struct RolloutModel;
}
namespace trinity::model {
class StepWeights;
class Transformer;
}

namespace trinity::launcher {

struct StageSummary {
  std::string name, mode, job_dir;
  int64_t train_steps = 0, explore_steps = 0;
  double seconds = 0;
  std::vector<std::pair<int64_t, std::map<std::string, double>>> evals;  // (weights version, metrics)
  std::string last_checkpoint;  // HF dir of the final weights ("" if none)
  std::string external_model;   // bench with model.external_model: the API's model name (evals[0])
  bool stopped = false;
};

// Runs all stages (or the config itself); returns one summary per stage run. Every stage run writes
// <job_dir>/run_status.json (run_status.h); `origin` (may be null) says how to run it again.
std::vector<StageSummary> run(const config::LoadResult& loaded, const std::atomic<bool>* stop,
                              const RunOrigin* origin = nullptr);
// Runs one resolved stage config.
StageSummary run_stage(const config::Config& cfg, const std::atomic<bool>* stop, const RunOrigin* origin = nullptr);

// `cfg` with every Hugging Face Hub model id (model.model_path, model.critic_model_path,
// explorer.auxiliary_models[].model_path; "Org/Name" or "Org/Name@revision") replaced by its local
// snapshot folder, found in the Hub cache or downloaded (hub/model.h); local paths stay as they are.
// With model.external_model enabled, model_path is the API's model name and stays as it is.
// Engine, trainer and checkpoint code only ever see local directories.
config::Config resolve_hub_models(const config::Config& cfg);

// The rollout model exactly as the explorer of `cfg` uses it: engine over `weights` at `version`,
// the model dir's tokenizer + chat template (model.custom_chat_template), explorer.rollout_model
// sampling defaults (used by `trinity debug workflow`).
std::shared_ptr<const explorer::RolloutModel> make_rollout_model(const config::Config& cfg,
                                                                 std::shared_ptr<const model::Transformer> weights,
                                                                 int64_t version);
// The rollout engine's weights at version 0 (explore, serve and bench modes): the base model
// (model.model_path through `w`: a bf16 checkpoint's layer weights stay bf16 in memory,
// model::lossless_storage) with the LoRA adapter the trainer starts from (model.lora_configs[].path)
// when there is one. `w` then loads the job's step directories on the same base.
std::shared_ptr<const model::Transformer> initial_rollout_weights(const config::Config& cfg, model::StepWeights& w);
// explorer.auxiliary_models (judges, teachers) as the explorer loads them (`trinity debug workflow`).
std::vector<std::shared_ptr<const explorer::RolloutModel>> make_auxiliary_models(const config::Config& cfg);

}  // namespace trinity::launcher
