// Durable experience storage in one SQLite file (storage_type: sql / sqlite), WAL mode, safe for several
// processes on one machine reading and writing the same file. Row life cycle (column `status`):
//   pending (reward NULL) -> ready -> leased (by a read, in the same transaction) -> done (ack)
//   leased -> ready again on release() or when lease_expires passes (consumed is decremented back).
// Read order: ready rows, consumed ASC, id ASC (least consumed first, then in write order; Trinity reads
// id DESC, newest first, which makes a resumed or lagging trainer train explore steps out of order); with
// replay: priority_fn over (model_version, consumed) and reuse after reuse_cooldown_time via available_at.
// Writes are one transaction per batch (all or none); a uid is stored once (re-writes are ignored).
#pragma once

#include <memory>
#include <set>

#include "buffer/storage.h"
#include "core/rng.h"

namespace trinity::buffer {

// Names of the experience buffers (tables) in a sqlite file, sorted; opens it read-only.
std::vector<std::string> sqlite_buffer_names(const std::string& path);

class SqliteStorage : public ExperienceStorage {
 public:
  explicit SqliteStorage(const StorageConfig& cfg);
  ~SqliteStorage() override;

  bool write(const std::vector<Experience>& batch, double timeout_s = 1800.0) override;
  ReadResult read(const ReadRequest& req) override;
  bool ack(const std::string& lease) override;
  bool renew(const std::string& lease) override;
  void release(const std::string& lease) override;
  size_t set_reward(const std::vector<std::string>& uids, double reward) override;
  size_t set_group_reward(const std::string& group_id, double reward) override;
  void close() override {}
  StorageStats stats() override;
  std::vector<Experience> scan(int64_t offset, int64_t limit) override;
  std::string state() override;
  void load_state(const std::string& state) override;
  std::string describe() const override;

  const std::string& path() const { return path_; }
  const std::string& table() const { return table_; }

 private:
  struct Db;
  // Runs fn inside BEGIN IMMEDIATE ... COMMIT, retrying on SQLITE_BUSY up to max_retry_times.
  template <typename Fn>
  auto transaction(Fn&& fn);
  bool try_lease_locked(const ReadRequest& req, bool partial, ReadResult& out);
  bool ack_in_transaction(const std::string& lease);

  StorageConfig cfg_;
  std::string path_, table_, owner_;
  std::unique_ptr<Db> db_;
  std::set<std::string> my_leases_;  // leases this object handed out and has not acked/released
  Rng rng_;
};

}  // namespace trinity::buffer
