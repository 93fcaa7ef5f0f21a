// Data-parallel training under mpirun (docs/scaling.md): rank 0 runs the job as one process would
// (reads the buffer, runs the explorer in mode both, writes checkpoints, metrics and run_status.json)
// and leads; ranks 1..n-1 only train. Each train step rank 0 broadcasts the mini-batch; every rank
// runs PolicyTrainer::train_step on it with TrainerOptions::comm set, computing the micro-batches of
// its slice of the rows; gradients are all-reduced, so every rank takes the same optimizer step and
// holds the same weights. Followers need the config file and the binary, not the model or the data:
// rank 0 sends the model's config.json and the trainer's whole state (weights, reference, critic,
// optimizer moments) when a trainer starts, so a run resumes from a checkpoint with any rank count.
//
// Messages (Comm::broadcast from rank 0): a JSON header line, then a body:
//   {"cmd":"trainer","stage":i,"schedule_steps":n[,"lora":{...}]} + config.json, then share_trainer_state
//   {"cmd":"step","step":k} + one experience_to_json line per experience
//   {"cmd":"end"} (that trainer is done)      {"cmd":"done"} (the run is done: followers return)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "buffer/experience.h"
#include "config/config.h"
#include "dist/comm.h"
#include "trainer/trainer.h"

namespace trinity::launcher {

// The trainer's options from a config (launcher.cpp); `total_steps` sizes the LR schedule.
trainer::TrainerOptions trainer_options(const config::Config& c, int64_t total_steps);
// The actor as the config asks (launcher.cpp): activation checkpointing, and LoRA adapters from
// model.lora_configs (fresh, seeded by the rollout seed, or model.lora_configs[0].path's PEFT adapter).
void configure_actor(model::Transformer& m, const config::Config& c);

// Rank 0 with followers (a one-rank comm: every lead_* is a no-op).
void lead_trainer(dist::Comm& comm, int stage, int64_t schedule_steps, const std::string& model_dir,
                  trainer::PolicyTrainer& tr);
void lead_step(dist::Comm& comm, int64_t step, const std::vector<buffer::Experience>& batch);
void lead_end_trainer(dist::Comm& comm);
void lead_done(dist::Comm& comm);

// Ranks > 0: follows rank 0 until it says done. `loaded` is this rank's copy of the config.
void follow(dist::Comm& comm, const config::LoadResult& loaded);

// Rank 0's trainer state (actor, reference, critic weights; optimizer moments and steps; last step)
// to every rank; both sides call it. A ConfigError when a follower's trainer differs in shape.
void share_trainer_state(dist::Comm& comm, trainer::PolicyTrainer& tr);

// Kernel threads per rank under mpirun when TRINITY_THREADS / OMP_NUM_THREADS are unset: the cores
// divided by the ranks on this machine (OMPI_COMM_WORLD_LOCAL_SIZE). Returns false when not distributed.
bool choose_rank_threads();

// The index of the stage being run (launcher::run sets it; 0 without stages).
int current_stage();
void set_current_stage(int i);

}  // namespace trinity::launcher
