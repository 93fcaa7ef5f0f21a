// Human pairwise-preference queue (`trinity data annotate`, later Studio) in one SQLite file: pairs of
// responses to one prompt wait for a person to pick the better one, and labelled pairs become a DPO
// data set. Pair life cycle (column `state`):
//   pending -> leased (next(): one annotator, lease_seconds) -> labelled (label(), with the lease)
//   leased -> skipped (skip(), with the lease; never served again); leased -> pending (lease expired,
//   checked on every next() / stats()); labelled -> pending (undo(), by the same annotator only).
//   A pair generated with two identical responses is stored skipped with identical = 1.
// Invariants: a prompt is stored once (prompt_hash UNIQUE: enqueue is idempotent); a pending pair is
// leased to one caller at a time; every state change is one BEGIN IMMEDIATE transaction committed with
// synchronous=FULL, so a change is durable when the call returns. Leases are wall-clock deadlines in the
// file, so they survive a restart (and expire after it). Conflicts (wrong / expired lease, already
// labelled, someone else's label) are return values, not exceptions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace trinity::buffer {

struct PreferenceQueueOptions {
  double lease_seconds = 600;   // how long next() reserves a pair for its annotator
  std::function<double()> now;  // wall-clock seconds since the epoch; empty = the system clock (tests inject)
};

// One stored pair. `prompt` is a JSON list of messages (the conversation the responses answer).
struct PreferencePair {
  int64_t id = 0;
  std::string prompt_hash, prompt, response_a, response_b;
  std::string model_path;
  int64_t model_version = 0;
  double created_at = 0;
  std::string state;  // pending | leased | labelled | skipped
  bool identical = false;
  std::string lease_token, leased_by;
  double lease_expires_at = 0;
  std::string choice, annotator;  // choice: a | b | tie | both_bad ("" until labelled)
  double labelled_at = 0;
};

// What the generator stores for one prompt.
struct NewPair {
  std::string prompt;  // JSON list of messages
  std::string response_a, response_b;
  std::string model_path;
  int64_t model_version = 0;
  bool identical = false;
};

// next(): the leased pair (none when nothing is pending) and how many pairs are still open
// (pending + leased, the returned one included).
struct LeaseResult {
  std::optional<PreferencePair> pair;
  int64_t remaining = 0;
};

// Outcome of label / skip / undo. kInvalid: a bad argument (unknown choice, empty annotator);
// kNotFound: no pair with that id; kConflict: the pair is not in a state that allows it.
struct QueueOutcome {
  enum Status { kOk, kInvalid, kNotFound, kConflict };
  Status status = kOk;
  std::string message;  // names the pair id / value when not kOk
  bool ok() const { return status == kOk; }
};

struct PreferenceStats {
  std::map<std::string, int64_t> by_state;  // pending, leased, labelled, skipped (all four present)
  int64_t identical = 0;                    // skipped because both responses were the same
  std::map<std::string, std::map<std::string, int64_t>> by_annotator;  // annotator -> choice -> labelled pairs
  int64_t total = 0;
};

struct DpoExportReport {
  int64_t written = 0;             // choice a or b
  int64_t ties = 0, both_bad = 0;  // labelled but not exported
};

class PreferenceQueue {
 public:
  // Opens (creating if needed) the queue file. IoError naming the path when it cannot.
  explicit PreferenceQueue(const std::string& path, PreferenceQueueOptions opts = {});
  ~PreferenceQueue();
  PreferenceQueue(const PreferenceQueue&) = delete;
  PreferenceQueue& operator=(const PreferenceQueue&) = delete;

  // The key of a prompt: sha256 hex of its canonical JSON (parsed and re-dumped, so whitespace does not
  // matter). ValueError when `prompt_json` is not JSON.
  static std::string prompt_hash(const std::string& prompt_json);
  // True when `path` is a sqlite file holding a queue (read-only check; false for anything else).
  static bool is_queue_file(const std::string& path);

  bool contains(const std::string& prompt_hash);
  // Stores a pair; false when its prompt is already queued (nothing changes then).
  bool enqueue(const NewPair& p);
  // Expired leases go back to pending, then: the pair `annotator` already holds (lease renewed, same
  // token), else the oldest pending pair, leased to `annotator`.
  LeaseResult next(const std::string& annotator);
  // Records `choice` (a | b | tie | both_bad) for a pair leased with `lease`; `annotator` "" = the
  // lease holder.
  QueueOutcome label(int64_t id, const std::string& lease, const std::string& choice, const std::string& annotator);
  // Marks a leased pair skipped (it is not served again).
  QueueOutcome skip(int64_t id, const std::string& lease);
  // Returns `annotator`'s own label on pair `id` to pending.
  QueueOutcome undo(int64_t id, const std::string& annotator);
  std::optional<PreferencePair> get(int64_t id);
  PreferenceStats stats();
  std::vector<PreferencePair> labelled();  // every labelled pair, by id
  // Writes every labelled pair with choice a or b as one DPO row (see dpo_row), atomically.
  DpoExportReport export_dpo(const std::string& out_path);

  const std::string& path() const { return path_; }

 private:
  struct Db;
  double now() const;
  void release_expired_locked();
  template <typename Fn>
  auto transaction(Fn&& fn);

  std::string path_;
  PreferenceQueueOptions opts_;
  std::unique_ptr<Db> db_;
  std::mutex mu_;
};

// One Trinity DPO row (JSON text, no newline) for a pair labelled a or b:
//   {"message": [{role, content}... without a final assistant turn], "chosen": [{"role": "assistant",
//    "content"}], "rejected": [...], "lineage": {"pair_id", "model_path", "model_version", "annotator",
//    "labelled_at" (ISO 8601 UTC)}}
std::string dpo_row(const PreferencePair& p);
// "2024-05-01T12:00:00Z" for wall-clock seconds.
std::string iso8601_utc(double seconds);

}  // namespace trinity::buffer
