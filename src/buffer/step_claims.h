// Explore-step leases for several explorer processes sharing one taskset (issue 17 §2): a table
// "<buffer name>_explore_steps" (step, owner, state, lease_expires) in the experience buffer's own
// database (sqlite file or PostgreSQL). An explorer claims a whole explore step, runs its tasks, writes
// the step's experiences in one transaction and marks the step done. A step whose lease expired (its
// explorer died or hangs) is handed to the next explorer that asks, unless that step's experiences
// are already in the buffer (the owner died between its write and its done mark): then it is only
// marked done. So every step's experiences land exactly once whoever crashes.
// Why leases rather than a shard by explorer index: a shard cannot move a dead explorer's tasks to
// the survivors, and explorers of different speeds would finish at different times.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "buffer/config.h"

namespace trinity::buffer {

struct ClaimStats {
  int64_t claimed = 0;  // steps handed out so far (done or running)
  int64_t done = 0;
};

class StepClaims {
 public:
  virtual ~StepClaims() = default;
  // The step this explorer should run next: the lowest step whose lease expired (or that `owner`
  // itself held before a restart), else the next unclaimed step <= max_step. 0 when every step is
  // claimed by another live explorer (ask again later); -1 when all max_step steps are done.
  // *previous_owner is set when the step was taken over from another explorer.
  virtual int64_t claim(const std::string& owner, int64_t max_step, double lease_s,
                        std::string* previous_owner = nullptr) = 0;
  // Extends the lease; false when the step is no longer this owner's (it was taken over).
  virtual bool renew(int64_t step, const std::string& owner, double lease_s) = 0;
  virtual void done(int64_t step, const std::string& owner) = 0;
  virtual ClaimStats stats() = 0;
  virtual std::string describe() const = 0;
};

// The step leases of experience buffer `buffer` (storage_type sql: sqlite or postgresql://).
// ConfigError for other storage types.
std::unique_ptr<StepClaims> open_step_claims(const StorageConfig& buffer);

}  // namespace trinity::buffer
