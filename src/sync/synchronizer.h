// Synchronizer (trinity-rft.md §6.2): how new policy weights travel from the trainer to the explorer.
//   memory      one process (`both` mode): the trainer publishes an immutable snapshot, the explorer
//               waits for a version and swaps it into its engine.
//   checkpoint  two processes (`explore` + `train`): the trainer writes
//               <job>/global_step_N/huggingface/ (with LoRA only its adapter,
//               global_step_N/actor/lora_adapter) and then latest_state_dict_iteration.txt; the
//               explorer polls that file every poll_s and loads the directory (model::StepWeights:
//               a LoRA step is the base, loaded once, plus the adapter).
// Each side also reports its state (running / finished / failed) so the peer never waits forever:
// in memory mode through the object, in checkpoint mode through <job>/<role>_status.json with the
// writer's pid (a peer whose pid is gone is reported as such, with a clear error). With two processes
// a failed or vanished peer may be restarted: the survivor keeps waiting, with a status line, until
// its own deadline (sync_timeout / max_read_timeout) and then fails with a clear error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/step_weights.h"
#include "model/transformer.h"

namespace trinity::sync {

enum class PeerState { kUnknown, kRunning, kFinished, kFailed, kGone };
const char* peer_state_name(PeerState s);

struct Weights {
  std::shared_ptr<const model::Transformer> model;
  int64_t version = 0;
};

enum class WaitStatus {
  kOk,             // weights of at least the requested version are in *out
  kTrainerDone,    // the trainer finished or failed; *out holds its last weights if newer than asked before
  kTimeout,        // sync_timeout passed
};

class Synchronizer {
 public:
  virtual ~Synchronizer() = default;
  // Trainer side: make `weights` (an immutable snapshot) the latest version.
  virtual void publish(std::shared_ptr<const model::Transformer> weights, int64_t version) = 0;
  // Explorer side: waits until a version >= min_version exists (newer than `have`), up to timeout_s.
  virtual WaitStatus wait_for(int64_t min_version, int64_t have, double timeout_s, Weights* out) = 0;
  virtual int64_t latest_version() = 0;
  // Each side reports its own end; error is "" when ok.
  virtual void set_state(const std::string& role, PeerState s, const std::string& error = "") = 0;
  virtual PeerState state(const std::string& role, std::string* error = nullptr) = 0;
  // Whether a peer that failed or vanished can come back: true for the checkpoint sync of two
  // processes (either can be restarted alone, so the survivor waits for it up to its deadline),
  // false in one process (a failed peer ends the run).
  virtual bool peers_can_restart() const { return false; }
};

std::unique_ptr<Synchronizer> make_memory_sync();
// base_dir: the run's model (model.model_path): its tokenizer files are copied into each published
// directory so it is a complete model, and a LoRA step's adapter is loaded on it. `weights`: the
// loader to share (the caller's base then serves both), null for one of its own.
std::unique_ptr<Synchronizer> make_checkpoint_sync(const std::string& job_dir, const std::string& base_dir,
                                                   double poll_s = 1.0,
                                                   std::shared_ptr<model::StepWeights> weights = nullptr);

}  // namespace trinity::sync
