// The experience storage interface shared by queue, sqlite and file storages, and the factory that
// opens one from a config or a URL ("sqlite:///path.db", "path.db", "path.jsonl", "queue").
// Exactly-once contract: read() hands a batch out under a lease; ack(lease) marks it consumed for good;
// release(lease) or lease expiry gives it back. Experiences without a reward are pending and are never
// returned by read() until set_reward()/set_group_reward() makes them ready. Timeouts and end of data are
// ReadStatus values, never exceptions. Resume protocol (trainer): read -> train -> save checkpoint that
// includes state() -> ack(lease); on restart load_state(saved) acks what the checkpoint covered and gives
// back this reader's other leases at once, so no experience is trained twice or lost.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "buffer/config.h"
#include "buffer/experience.h"

namespace trinity::buffer {

enum class ReadStatus {
  kOk,       // a full batch of the requested size
  kTimeout,  // deadline passed: batch holds what was available if allow_partial, else nothing
  kClosed,   // the storage is closed and drained: batch holds the final remainder (maybe empty)
};

struct ReadRequest {
  size_t batch_size = 1;
  double timeout_s = 1800.0;                 // max_read_timeout
  std::optional<int64_t> min_model_version;  // staleness control: older experiences are not returned
  bool allow_partial = false;                // on timeout, hand out what is ready instead of nothing
};

// A request with the buffer's configured timeout (max_read_timeout) and train_batch_size.
inline ReadRequest read_request(const StorageConfig& cfg, size_t batch_size) {
  ReadRequest r;
  r.batch_size = batch_size;
  r.timeout_s = cfg.max_read_timeout;
  return r;
}

struct ReadResult {
  ReadStatus status = ReadStatus::kTimeout;
  std::vector<Experience> batch;
  std::string lease;  // "" when batch is empty
};

// Counts for `trinity buffer stats` and tests.
struct StorageStats {
  int64_t total = 0, pending = 0, ready = 0, leased = 0, consumed = 0;
  std::map<int64_t, int64_t> by_model_version;  // model_version -> rows
  std::vector<double> rewards;                  // rewards of all rewarded rows (for histograms)
};

class ExperienceStorage {
 public:
  virtual ~ExperienceStorage() = default;
  // Appends experiences atomically (all or none). Returns false only if a bounded in-process queue stayed
  // full until timeout_s passed.
  virtual bool write(const std::vector<Experience>& batch, double timeout_s = 1800.0) = 0;
  virtual ReadResult read(const ReadRequest& req) = 0;
  // Consumes a leased batch. Returns false if the lease was no longer held (it expired and the batch was
  // given back, or it was acked already): the batch may then be handed out again.
  virtual bool ack(const std::string& lease) = 0;
  // Extends a lease by lease_timeout from now (heartbeat for slow train steps). false if no longer held.
  virtual bool renew(const std::string& lease) = 0;
  virtual void release(const std::string& lease) = 0;
  // Sets the reward of pending experiences by uid (Eid::uid()). Returns how many became ready.
  virtual size_t set_reward(const std::vector<std::string>& uids, double reward) = 0;
  // Sets the reward of every pending experience of a group (tid = batch/task, or rid = batch/task/run).
  virtual size_t set_group_reward(const std::string& group_id, double reward) = 0;
  // Registers one more writer (Trinity's acquire): close() then closes only when the last one closes.
  virtual void acquire() {}
  // No more writes from this writer. Readers of a closed, drained in-process queue get kClosed; sqlite
  // has no cross-process close, so its readers end on timeout (as Trinity's SQL reader does).
  virtual void close() = 0;
  virtual StorageStats stats() = 0;
  // Every stored experience in insertion order, offset/limit paged (for inspection and export).
  virtual std::vector<Experience> scan(int64_t offset, int64_t limit) = 0;
  // Reader run state (JSON text) and its restore; see the resume protocol above.
  virtual std::string state() = 0;
  virtual void load_state(const std::string& state) = 0;
  virtual std::string describe() const = 0;
};

// The read loop of the database storages (sqlite, postgresql), which have no cross-process
// notification: calls try_once(partial, out) until it leases a batch or req.timeout_s passes, sleeping
// 2 ms doubling to 100 ms between tries; the last try may take a partial batch (req.allow_partial).
// Sets out.status: kOk for a full batch, kTimeout otherwise.
ReadResult poll_read(const ReadRequest& req, const std::function<bool(bool partial, ReadResult& out)>& try_once);

// Opens the storage a config describes (storage_type queue|sql|sqlite|file).
std::unique_ptr<ExperienceStorage> open_storage(const StorageConfig& cfg);
// Opens a storage by URL for inspection: sqlite:///x.db, x.db / x.sqlite, x.jsonl / x.json.
std::unique_ptr<ExperienceStorage> open_storage_url(const std::string& url);
// A database URL or file a storage can live in: sqlite:///x.db, x.db, x.sqlite, x.sqlite3, or a
// postgresql:// / mysql:// URL (recognised so that it gets a clear "not supported" error when opened).
bool is_database_path(const std::string& path);
// SQLAlchemy form: "sqlite:///rel.db" -> "rel.db", "sqlite:////abs/x.db" -> "/abs/x.db"; other text as is.
std::string sqlite_path_from_url(const std::string& url);
// The SQL table of buffer `name`: letters, digits and '_' kept, others '_' (PostgreSQL: lower case).
std::string sql_table_name(const std::string& name, bool lowercase = false);

namespace detail {
// The state column of the durable storages' experience rows (sqlite and PostgreSQL: same values on disk).
enum RowStatus : int { kPending = 0, kReady = 1, kLeased = 2, kDone = 3 };
}  // namespace detail

}  // namespace trinity::buffer
