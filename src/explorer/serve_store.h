// ServeStore: serve mode's durable record of model calls awaiting rewards (Trinity-RFT's
// HistoryRecorder, <job>/buffer/proxy_history.db). Every call answered by the serve endpoint is a
// row (state recorded); POST /feedback attaches a reward, task id and run id to rows by response id
// (state ready); POST /commit turns the ready rows into experiences and marks them committed.
// Rows are written before the HTTP answer goes out (SQLite WAL, or PostgreSQL), so killing the serving process
// loses no call that a client could have given feedback on, and no reward that was acknowledged.
// Rows still unrewarded after a time-to-live are dropped (drop_pending_older_than). Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_history.h"

namespace trinity::explorer {

class ServeStore {
 public:
  virtual ~ServeStore() = default;

  virtual void record(const tok::RecordedCall& c) = 0;

  struct Feedback {
    int64_t updated = 0;               // rows (samples) that got the reward
    std::vector<std::string> unknown;  // ids with no uncommitted row (never recorded, dropped or committed)
  };
  virtual Feedback feedback(const std::vector<std::string>& msg_ids, double reward, const std::string& task_id,
                            int64_t run_id) = 0;

  // The rewarded, uncommitted calls grouped by (task id, run id), calls in the order they were made.
  struct Group {
    std::string task_id;
    int64_t run_id = 0;
    double reward = 0;  // the last feedback given to the group's calls
    std::vector<tok::RecordedCall> calls;
  };
  virtual std::vector<Group> ready() = 0;
  // Marks the given (id, choice) rows committed.
  virtual void mark_committed(const std::vector<std::pair<std::string, int64_t>>& rows) = 0;
  // Deletes unrewarded rows recorded before `cutoff` (seconds since the epoch); returns how many.
  virtual int64_t drop_pending_older_than(double cutoff) = 0;

  struct Counts {
    int64_t recorded = 0, ready = 0, committed = 0;
  };
  virtual Counts counts() = 0;
  // A persistent integer (the serve explore step).
  virtual int64_t get_meta(const std::string& key, int64_t def) = 0;
  virtual void set_meta(const std::string& key, int64_t value) = 0;
  virtual std::string describe() const = 0;
};

// The history in a sqlite file (created if absent), or with a postgresql:// URL in the tables
// "<table>_calls" and "<table>_meta" of that database, so serve processes on several machines (behind
// one load balancer) share one history: a /feedback or /commit may reach any of them. IoError naming
// the file or database when it cannot be opened.
std::unique_ptr<ServeStore> open_serve_store(const std::string& where, const std::string& table = "proxy_history");

// The PostgreSQL store (serve_store_pg.cpp).
std::unique_ptr<ServeStore> open_pg_serve_store(const std::string& url, const std::string& table);

namespace detail {
// The state column of the stores' call rows (sqlite and PostgreSQL: same values on disk).
enum CallState : int { kRecorded = 0, kReady = 1, kCommitted = 2 };
}  // namespace detail

}  // namespace trinity::explorer
