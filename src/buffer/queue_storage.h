// In-process experience queue (storage_type: queue): bounded by `capacity` experiences, blocking reads
// with a timeout, leases, pending (reward-less) experiences held back until rewarded, and the replay
// variant (replay_buffer.enable): highest priority first, FIFO among equal priorities, use counts,
// re-insertion reuse_cooldown_time seconds after ack, lowest-priority eviction when full.
// Unlike Trinity (whole explore steps per item) every experience is its own item, so trainer batches
// and replay work per experience. Not durable: state() only lists open leases; use sqlite to resume.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "buffer/storage.h"
#include "core/rng.h"

namespace trinity::buffer {

class QueueStorage : public ExperienceStorage {
 public:
  // cfg.path, if set, names a backup mirror (sqlite URL/.db or .jsonl) that receives every write.
  explicit QueueStorage(const StorageConfig& cfg);
  ~QueueStorage() override;

  bool write(const std::vector<Experience>& batch, double timeout_s = 1800.0) override;
  ReadResult read(const ReadRequest& req) override;
  bool ack(const std::string& lease) override;
  bool renew(const std::string& lease) override;
  void release(const std::string& lease) override;
  size_t set_reward(const std::vector<std::string>& uids, double reward) override;
  size_t set_group_reward(const std::string& group_id, double reward) override;
  void acquire() override;
  void close() override;
  StorageStats stats() override;
  std::vector<Experience> scan(int64_t offset, int64_t limit) override;
  std::string state() override;
  void load_state(const std::string& state) override;
  std::string describe() const override;

 private:
  struct Key {  // ordered: priority descending, then insertion order (FIFO)
    double priority;
    uint64_t seq;
    bool operator<(const Key& o) const { return priority != o.priority ? priority > o.priority : seq < o.seq; }
  };
  struct Lease {
    std::vector<Experience> items;  // as stored (use_count before this read)
    double expires;
  };
  using Clock = std::chrono::steady_clock;

  double now() const;
  void insert_ready_locked(Experience e);
  void maintain_locked();  // expire leases, re-insert cooled-down experiences
  size_t held_locked() const { return ready_.size() + pending_.size(); }

  StorageConfig cfg_;
  std::unique_ptr<ExperienceStorage> mirror_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Experience> ready_;
  std::map<std::string, Experience> pending_;         // uid -> experience without reward
  std::map<std::string, Lease> leases_;
  std::multimap<double, Experience> cooling_;          // time ready again -> experience
  int64_t consumed_ = 0;
  uint64_t seq_ = 0;
  uint64_t lease_seq_ = 0;
  bool closed_ = false;
  int64_t writers_ = 0;  // acquire() count; close() closes when it drops to 0
  Rng rng_;
  Clock::time_point t0_;
};

}  // namespace trinity::buffer
