// The trainer side of a run: where train batches come from and the loop that trains on them.
//   StorageSource  RL experiences from the buffer (queue or sqlite), read under leases; reads wait in
//                  1 s slices and check the explorer's state, so a finished explorer ends training
//                  (a last partial batch is trained) and a dead one is a clear error, never a hang.
//   DatasetSource  SFT/DPO experiences built once from files, epochs in order.
// Resume contract: a checkpoint's extra state holds the source state (buffer leases, or the dataset
// position) of exactly the batches whose updates it contains; leases are acked after the save.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "buffer/storage.h"
#include "trainer/trainer.h"

namespace trinity::monitor {
class Monitor;
}
namespace trinity::sync {
class Synchronizer;
}

namespace trinity::launcher {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Fills `out` with the next batch; false when there is no more data.
  virtual bool next(std::vector<buffer::Experience>& out, int64_t step) = 0;
  virtual std::string state() = 0;              // JSON
  virtual void load_state(const std::string&) = 0;
  virtual void committed() {}                   // the batches so far are in a saved checkpoint
  virtual std::optional<int64_t> total_steps() const { return std::nullopt; }
};

std::unique_ptr<BatchSource> storage_source(buffer::ExperienceStorage* storage, int64_t batch_size,
                                            double max_read_timeout, sync::Synchronizer* sync,
                                            std::optional<int64_t> max_staleness_from, const std::atomic<bool>* stop);
// total_epochs passes over `data`, or (buffer.total_steps, as upstream's file reader) batch_size x
// total_steps rows wrapping around it.
std::unique_ptr<BatchSource> dataset_source(std::vector<buffer::Experience> data, int64_t batch_size,
                                            int64_t total_epochs, std::optional<int64_t> total_steps = std::nullopt);

// Batches of usual rows then expert rows (sample_strategy mix); state {"usual": ..., "expert": ...}.
std::unique_ptr<BatchSource> mix_source(std::unique_ptr<BatchSource> usual, std::unique_ptr<BatchSource> expert);

struct TrainLoopOptions {
  std::string job_dir;
  std::string tokenizer_dir;
  int64_t total_steps = 0;        // 0: until the source ends
  int64_t save_interval = 0;      // 0: only the final save
  int64_t sync_interval = 1;      // publish weights every this many steps (sync != null)
  int64_t max_checkpoints_to_keep = 0;
  tensor::DType hf_dtype = tensor::DType::kF32;  // of global_step_N/huggingface (CheckpointOptions)
  bool progress = true;
  int64_t max_staleness = -1;     // staleness_control (< 0: off)
  // RL from an explorer: the largest lag (step - 1 - model_version) the sync schedule produces,
  // sync_interval - 1 + sync_offset; older experiences get a warning (< 0: no check).
  int64_t expected_lag = -1;
};

struct TrainLoopResult {
  int64_t steps = 0;              // last train step done
  std::string last_checkpoint;    // global_step dir of the final save
  bool stopped = false;
};

// Trains from `start_step + 1` until the source ends, total_steps, or *stop; saves a checkpoint at
// save_interval and at the end; publishes weights through `sync` every sync_interval steps.
TrainLoopResult train_loop(trainer::PolicyTrainer& tr, BatchSource& src, const TrainLoopOptions& opt,
                           int64_t start_step, monitor::Monitor* mon, sync::Synchronizer* sync,
                           const std::atomic<bool>* stop);

}  // namespace trinity::launcher
