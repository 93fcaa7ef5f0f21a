// Replay priority functions (trinity-rft.md §4.2), shared by the queue and sqlite storages.
//   linear_decay(decay):                         p = model_version - decay * use_count, always kept
//   decay_limit_randomization(decay, limit, σ):  p = model_version - decay * use_count + N(0, σ²),
//                                                kept only while use_count < limit (limit <= 0: no limit)
#pragma once

#include <cstdint>

#include "buffer/config.h"
#include "core/rng.h"

namespace trinity::buffer {

struct Priority {
  double value = 0.0;
  bool keep = true;
};

// Throws ConfigError for an unknown priority_fn name.
void check_priority_fn(const ReplayConfig& cfg);
Priority replay_priority(const ReplayConfig& cfg, int64_t model_version, int64_t use_count, Rng& rng);

}  // namespace trinity::buffer
