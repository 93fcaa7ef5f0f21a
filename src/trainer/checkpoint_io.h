// Trainer checkpoints in Trinity's job-directory layout (trinity-rft.md §6.4):
//   <job>/global_step_<N>/huggingface/          actor as an HF model dir in CheckpointOptions::hf_dtype
//                                               (tokenizer files copied)
//   <job>/global_step_<N>/actor/                the actor's exact fp32 weights (HF dir), only when
//                                               hf_dtype is not F32 and without LoRA
//                                               (model/checkpoint_dtype.h)
//   <job>/global_step_<N>/actor/lora_adapter/   with LoRA: the PEFT adapter, the exact state
//                                               (huggingface/ is then the base with the adapter
//                                               merged; the optimizer holds the adapters' moments;
//                                               a resume and a checkpoint-synced explorer read the
//                                               base from model_path and the adapter from here)
//   <job>/global_step_<N>/critic/               value model (PPO with a critic)
//   <job>/global_step_<N>/optimizer.safetensors actor.exp_avg / actor.exp_avg_sq (+ critic.*)
//   <job>/global_step_<N>/trainer_state.json    step, optimizer steps, schedules, KL coefficients,
//                                               extra_state (buffer reader / sample strategy state)
//   <job>/global_step_<N>/.full_checkpoint      marks a resumable checkpoint (sync dirs lack it)
//   <job>/latest_checkpointed_iteration.txt     N of the newest full checkpoint
//   <job>/latest_state_dict_iteration.txt       N of the newest weights (full or sync-only)
// A save writes global_step_<N>.tmp-<pid>/, fsyncs every file, then renames: a crash leaves either
// the old state or the new one, never a partial global_step_<N>. Loading restores actor, critic,
// optimizer moments and KL coefficients bitwise, so training continues exactly as without a stop.
// The reference model is not saved: build the trainer from the initial model, then load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainer/trainer.h"

namespace trinity::trainer {

struct CheckpointOptions {
  std::string tokenizer_dir;            // copy tokenizer/generation files from here ("" = none)
  // dtype of huggingface/ (rounded to nearest even from the fp32 weights); not F32: the fp32
  // weights also go to actor/, so a resume stays bitwise. Optimizer moments and critic: always F32.
  tensor::DType hf_dtype = tensor::DType::kF32;
  int64_t max_checkpoints_to_keep = 0;  // > 0: keep only the newest N full checkpoints
};

struct TrainerCheckpoint {
  int64_t step = 0;
  std::string dir;                       // <job>/global_step_<N>
  std::string extra_state_json = "{}";   // what the caller passed to save_trainer_checkpoint
};

std::string global_step_dir(const std::string& job_dir, int64_t step);

// Full checkpoint of `trainer` at train step `step`. extra_state_json must be a JSON value (ValueError
// otherwise, and nothing is written). Returns the checkpoint directory.
std::string save_trainer_checkpoint(const std::string& job_dir, int64_t step, PolicyTrainer& trainer,
                                    const std::string& extra_state_json = "{}", const CheckpointOptions& opts = {});

// Restores the newest full checkpoint (latest_checkpointed_iteration.txt) into `trainer`, which must
// have been built with the same model config and algorithm. nullopt when the job has none; IoError
// for a missing/corrupt checkpoint, ValueError for a config mismatch.
std::optional<TrainerCheckpoint> load_trainer_checkpoint(const std::string& job_dir, PolicyTrainer& trainer);

// Weights only, for checkpoint-sync between explorer and trainer processes: writes
// global_step_<N>/huggingface/ (fp32, no optimizer, no marker), or with LoRA only the adapter
// (global_step_<N>/actor/lora_adapter; model::StepWeights reads either), unless a full checkpoint of
// N exists, and updates latest_state_dict_iteration.txt. Returns the adapter directory with LoRA,
// else model::exact_weights_dir of the step.
std::string save_sync_weights(const std::string& job_dir, int64_t step, const PolicyTrainer& trainer,
                              const std::string& tokenizer_dir = "");

// N from <job>/<name> (latest_checkpointed_iteration.txt / latest_state_dict_iteration.txt), if any.
std::optional<int64_t> read_iteration(const std::string& job_dir, const std::string& name);

// Removes all but the newest `keep` full checkpoints; returns how many were removed.
int64_t prune_checkpoints(const std::string& job_dir, int64_t keep);

}  // namespace trinity::trainer
