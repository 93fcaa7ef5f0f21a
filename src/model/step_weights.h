// The rollout weights a job's step directory (global_step_N) holds, as every explorer that syncs
// through checkpoints (explore / serve / bench modes, the checkpoint synchronizer) loads them. A
// trainer with LoRA writes only its adapter (<step>/actor/lora_adapter, a few MB): the weights are
// the run's base model plus that adapter, and the base is loaded once and shared by every version,
// so the engine packs it once and each sync packs only the adapters (as in-memory sync does).
// Without an adapter the step's exact weights are loaded (exact_weights_dir).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "model/transformer.h"

namespace trinity::model {

// <step_dir>/actor/lora_adapter: where a LoRA trainer's step keeps its adapter (Trinity's place).
std::string step_adapter_dir(const std::string& step_dir);

// An HF model directory as rollout / serving weights: a bf16 checkpoint's layer weights stay bf16
// in memory (the engine computes from its packed copy; lossless_storage).
std::shared_ptr<const Transformer> load_rollout_weights(const std::string& dir);

// Loads step directories on one base model (thread-safe).
class StepWeights {
 public:
  // base_dir: the run's model.model_path (the base every adapter of the job is trained on).
  explicit StepWeights(std::string base_dir) : base_dir_(std::move(base_dir)) {}

  // The base model, held as stored (lossless_storage): loaded once and kept while anyone holds it
  // (always, once an adapter was loaded on it; a full fine-tuning run's explorer drops it when its
  // engine moves to the first synced weights).
  std::shared_ptr<const Transformer> base();

  // The base with a PEFT adapter (model::load_adapter's errors), its weights shared with base().
  std::shared_ptr<const Transformer> with_adapter(const std::string& adapter_dir);

  // The model a step directory describes: base + its adapter, or the step's exact weights. IoError
  // naming the directory when it holds neither.
  std::shared_ptr<const Transformer> load(const std::string& step_dir);

 private:
  std::string base_dir_;
  std::mutex mu_;
  std::weak_ptr<const Transformer> loaded_;
  std::shared_ptr<const Transformer> kept_;  // set by with_adapter
};

}  // namespace trinity::model
