// Replay priority functions (see replay.h).
#include "buffer/replay.h"

#include "core/error.h"

namespace trinity::buffer {

void check_priority_fn(const ReplayConfig& cfg) {
  if (cfg.priority_fn != "linear_decay" && cfg.priority_fn != "decay_limit_randomization")
    throw ConfigError("buffer", strcat("replay_buffer.priority_fn '", cfg.priority_fn,
                                       "' is unknown; expected linear_decay or decay_limit_randomization"));
  if (cfg.reuse_cooldown_time && *cfg.reuse_cooldown_time < 0)
    throw ConfigError("buffer", strcat("replay_buffer.reuse_cooldown_time must be >= 0, got ",
                                       *cfg.reuse_cooldown_time));
}

Priority replay_priority(const ReplayConfig& cfg, int64_t model_version, int64_t use_count, Rng& rng) {
  Priority p;
  p.value = static_cast<double>(model_version) - cfg.decay * static_cast<double>(use_count);
  if (cfg.priority_fn == "decay_limit_randomization") {
    if (cfg.sigma > 0) p.value += cfg.sigma * rng.normal();
    p.keep = cfg.use_count_limit <= 0 || use_count < cfg.use_count_limit;
  }
  return p;
}

}  // namespace trinity::buffer
