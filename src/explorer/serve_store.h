// ServeStore: serve mode's durable record of model calls awaiting rewards (Trinity-RFT's
// HistoryRecorder, <job>/buffer/proxy_history.db). Every call answered by the serve endpoint is a
// row (state recorded); POST /feedback attaches a reward, task id and run id to rows by response id
// (state ready); POST /commit turns the ready rows into experiences and marks them committed.
// Rows are written before the HTTP answer goes out (SQLite, WAL), so killing the serving process
// loses no call that a client could have given feedback on, and no reward that was acknowledged.
// Rows still unrewarded after a time-to-live are dropped (drop_pending_older_than). Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_history.h"

struct sqlite3;

namespace trinity::explorer {

class ServeStore {
 public:
  // Opens (creating) the database file. IoError naming the path when it cannot.
  explicit ServeStore(const std::string& path);
  ~ServeStore();
  ServeStore(const ServeStore&) = delete;
  ServeStore& operator=(const ServeStore&) = delete;

  void record(const tok::RecordedCall& c);

  struct Feedback {
    int64_t updated = 0;               // rows (samples) that got the reward
    std::vector<std::string> unknown;  // ids with no uncommitted row (never recorded, dropped or committed)
  };
  Feedback feedback(const std::vector<std::string>& msg_ids, double reward, const std::string& task_id, int64_t run_id);

  // The rewarded, uncommitted calls grouped by (task id, run id), calls in the order they were made.
  struct Group {
    std::string task_id;
    int64_t run_id = 0;
    double reward = 0;  // the last feedback given to the group's calls
    std::vector<tok::RecordedCall> calls;
  };
  std::vector<Group> ready();
  // Marks the given (id, choice) rows committed.
  void mark_committed(const std::vector<std::pair<std::string, int64_t>>& rows);
  // Deletes unrewarded rows recorded before `cutoff` (seconds since the epoch); returns how many.
  int64_t drop_pending_older_than(double cutoff);

  struct Counts {
    int64_t recorded = 0, ready = 0, committed = 0;
  };
  Counts counts();
  // A persistent integer (the serve explore step).
  int64_t get_meta(const std::string& key, int64_t def);
  void set_meta(const std::string& key, int64_t value);
  const std::string& path() const { return path_; }

 private:
  void exec(const char* sql);
  std::mutex mu_;
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace trinity::explorer
