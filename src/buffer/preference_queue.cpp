// PreferenceQueue (see preference_queue.h): one SQLite connection per object, guarded by a mutex; WAL
// mode with busy_timeout so another process (Studio, a second annotate server) can share the file, and
// synchronous=FULL so a label is on disk when label() returns (labels are few and precious).
// Timestamps are wall-clock seconds (REAL); lease tokens are 128 random bits in hex.
#include "buffer/preference_queue.h"

#include <sqlite3.h>

#include <chrono>
#include <ctime>
#include <random>
#include <thread>

#include "buffer/json_util.h"
#include "buffer/sqlite_stmt.h"
#include "core/error.h"
#include "core/file.h"
#include "core/sha256.h"

namespace trinity::buffer {

using detail::json;

namespace {

constexpr int kQueueSchemaVersion = 1;  // PRAGMA user_version of a queue file

using Busy = detail::SqliteBusy;

// Statements whose errors are the annotate component's.
class AnnotateStmt : public detail::Stmt {
 public:
  AnnotateStmt(sqlite3* db, const std::string& sql, const std::string& where)
      : detail::Stmt(db, sql, where, "annotate") {}
};

const char kColumns[] =
    "id, prompt_hash, prompt, response_a, response_b, model_path, model_version, created_at, state, identical, "
    "lease_token, leased_by, lease_expires_at, choice, annotator, labelled_at";

PreferencePair read_pair(const AnnotateStmt& s) {
  PreferencePair p;
  p.id = s.i64(0);
  p.prompt_hash = s.text(1), p.prompt = s.text(2), p.response_a = s.text(3), p.response_b = s.text(4);
  p.model_path = s.text(5);
  p.model_version = s.i64(6);
  p.created_at = s.f64(7);
  p.state = s.text(8);
  p.identical = s.i64(9) != 0;
  p.lease_token = s.text(10), p.leased_by = s.text(11);
  p.lease_expires_at = s.f64(12);
  p.choice = s.text(13), p.annotator = s.text(14);
  p.labelled_at = s.f64(15);
  return p;
}

std::string random_token() {
  std::random_device rd;
  const char* hex = "0123456789abcdef";
  std::string t;
  for (int i = 0; i < 4; ++i) {
    const uint32_t v = rd();
    for (int k = 0; k < 8; ++k) t += hex[(v >> (4 * k)) & 0xf];
  }
  return t;
}

bool valid_choice(const std::string& c) {
  return c == "a" || c == "b" || c == "tie" || c == "both_bad";
}

QueueOutcome fail(QueueOutcome::Status s, std::string msg) {
  return {s, std::move(msg)};
}

}  // namespace

struct PreferenceQueue::Db {
  sqlite3* db = nullptr;
  std::string where;
  ~Db() {
    if (db) sqlite3_close_v2(db);
  }
  void exec(const char* sql) { detail::sqlite_exec(db, sql, where, "annotate"); }
  std::optional<PreferencePair> get(int64_t id) {
    AnnotateStmt s(db, strcat("SELECT ", kColumns, " FROM pairs WHERE id = ?").c_str(), where);
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    return read_pair(s);
  }
  int64_t count(const char* sql) {
    AnnotateStmt s(db, sql, where);
    return s.step() ? s.i64(0) : 0;
  }
};

template <typename Fn>
auto PreferenceQueue::transaction(Fn&& fn) {
  // 5 attempts, each after busy_timeout (10 s) of waiting for another process.
  return detail::write_transaction(db_->db, db_->where, "annotate", 5, 0.1, std::forward<Fn>(fn));
}

PreferenceQueue::PreferenceQueue(const std::string& path, PreferenceQueueOptions opts)
    : path_(path), opts_(std::move(opts)), db_(std::make_unique<Db>()) {
  if (path_.empty()) throw ConfigError("annotate", "--queue: the queue file path is empty");
  if (!(opts_.lease_seconds > 0))
    throw ConfigError("annotate", strcat("lease_seconds must be > 0, got ", opts_.lease_seconds));
  db_->where = strcat("preference queue ", path_);
  const int rc = sqlite3_open_v2(path_.c_str(), &db_->db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK)
    throw IoError("annotate", strcat("cannot open queue file '", path_,
                                     "': ", db_->db ? sqlite3_errmsg(db_->db) : "out of memory"));
  sqlite3_busy_timeout(db_->db, 10000);
  for (int attempt = 0;; ++attempt) {
    try {
      db_->exec("PRAGMA journal_mode=WAL");
      db_->exec("PRAGMA synchronous=FULL");
      break;
    } catch (const Busy&) {
      if (attempt > 50) throw IoError("annotate", strcat(db_->where, ": cannot switch to WAL mode (locked)"));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  transaction([&] {
    const int64_t version = db_->count("PRAGMA user_version");
    if (version > kQueueSchemaVersion)
      throw IoError("annotate", strcat(db_->where, ": schema version ", version, " is newer than this trinity's (",
                                       kQueueSchemaVersion, "); upgrade trinity"));
    db_->exec(
        "CREATE TABLE IF NOT EXISTS pairs ("
        "id INTEGER PRIMARY KEY, prompt_hash TEXT NOT NULL UNIQUE, prompt TEXT NOT NULL, "
        "response_a TEXT NOT NULL, response_b TEXT NOT NULL, model_path TEXT NOT NULL DEFAULT '', "
        "model_version INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, "
        "state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'labelled', 'skipped')), "
        "identical INTEGER NOT NULL DEFAULT 0, lease_token TEXT, leased_by TEXT, lease_expires_at REAL, "
        "choice TEXT CHECK (choice IS NULL OR choice IN ('a', 'b', 'tie', 'both_bad')), annotator TEXT, "
        "labelled_at REAL)");
    db_->exec("CREATE INDEX IF NOT EXISTS pairs_state ON pairs (state, id)");
    db_->exec(strcat("PRAGMA user_version = ", kQueueSchemaVersion).c_str());
  });
}

PreferenceQueue::~PreferenceQueue() = default;

double PreferenceQueue::now() const {
  if (opts_.now) return opts_.now();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool PreferenceQueue::is_queue_file(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close_v2(db);
    return false;
  }
  bool yes = false;
  try {
    detail::Stmt st(db, "SELECT COUNT(*) FROM pragma_table_info('pairs') WHERE name IN ('prompt_hash', 'response_a')",
                    path, "annotate");
    yes = st.step() && st.i64(0) == 2;
  } catch (...) {  // not a sqlite file, locked, ...: not a queue we can use
  }
  sqlite3_close_v2(db);
  return yes;
}

std::string PreferenceQueue::prompt_hash(const std::string& prompt_json) {
  return sha256_hex(detail::parse_json(prompt_json, "annotate prompt").dump());
}

bool PreferenceQueue::contains(const std::string& hash) {
  std::lock_guard<std::mutex> l(mu_);
  AnnotateStmt s(db_->db, "SELECT 1 FROM pairs WHERE prompt_hash = ?", db_->where);
  s.bind(1, hash);
  return s.step();
}

bool PreferenceQueue::enqueue(const NewPair& p) {
  const std::string hash = prompt_hash(p.prompt);
  std::lock_guard<std::mutex> l(mu_);
  return transaction([&] {
    AnnotateStmt s(
        db_->db,
        "INSERT OR IGNORE INTO pairs (prompt_hash, prompt, response_a, response_b, model_path, model_version, "
        "created_at, state, identical) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        db_->where);
    s.bind(1, hash).bind(2, p.prompt).bind(3, p.response_a).bind(4, p.response_b).bind(5, p.model_path);
    s.bind(6, p.model_version).bind(7, now()).bind(8, std::string(p.identical ? "skipped" : "pending"));
    s.bind(9, static_cast<int64_t>(p.identical ? 1 : 0));
    s.step();
    return sqlite3_changes(db_->db) > 0;
  });
}

void PreferenceQueue::release_expired_locked() {
  AnnotateStmt s(db_->db,
                 "UPDATE pairs SET state = 'pending', lease_token = NULL, leased_by = NULL, lease_expires_at = NULL "
                 "WHERE state = 'leased' AND lease_expires_at <= ?",
                 db_->where);
  s.bind(1, now());
  s.step();
}

LeaseResult PreferenceQueue::next(const std::string& annotator) {
  std::lock_guard<std::mutex> l(mu_);
  return transaction([&] {
    release_expired_locked();
    const double t = now();
    LeaseResult out;
    int64_t id = 0;
    {
      AnnotateStmt held(db_->db, "SELECT id FROM pairs WHERE state = 'leased' AND leased_by = ? ORDER BY id LIMIT 1",
                        db_->where);
      held.bind(1, annotator);
      if (held.step()) id = held.i64(0);
    }
    if (id) {  // the caller asks again (a reloaded page): the same pair, lease renewed
      AnnotateStmt s(db_->db, "UPDATE pairs SET lease_expires_at = ? WHERE id = ?", db_->where);
      s.bind(1, t + opts_.lease_seconds).bind(2, id);
      s.step();
    } else {
      AnnotateStmt pick(db_->db, "SELECT id FROM pairs WHERE state = 'pending' ORDER BY id LIMIT 1", db_->where);
      if (pick.step()) id = pick.i64(0);
      if (id) {
        AnnotateStmt s(
            db_->db,
            "UPDATE pairs SET state = 'leased', lease_token = ?, leased_by = ?, lease_expires_at = ? WHERE id = ?",
            db_->where);
        s.bind(1, random_token()).bind(2, annotator).bind(3, t + opts_.lease_seconds).bind(4, id);
        s.step();
      }
    }
    if (id) out.pair = db_->get(id);
    out.remaining = db_->count("SELECT COUNT(*) FROM pairs WHERE state IN ('pending', 'leased')");
    return out;
  });
}

QueueOutcome PreferenceQueue::label(int64_t id, const std::string& lease, const std::string& choice,
                                    const std::string& annotator) {
  if (!valid_choice(choice))
    return fail(QueueOutcome::kInvalid, strcat("choice '", choice, "' is not one of a, b, tie, both_bad"));
  std::lock_guard<std::mutex> l(mu_);
  return transaction([&]() -> QueueOutcome {
    const auto p = db_->get(id);
    if (!p) return fail(QueueOutcome::kNotFound, strcat("pair ", id, " does not exist"));
    if (p->state == "labelled")
      return fail(QueueOutcome::kConflict,
                  strcat("pair ", id, " is already labelled (", p->choice, " by '", p->annotator, "')"));
    if (p->state != "leased")
      return fail(QueueOutcome::kConflict, strcat("pair ", id, " is not leased (state ", p->state,
                                                  "): get a lease with GET /api/annotate/next first"));
    if (p->lease_token != lease)
      return fail(QueueOutcome::kConflict, strcat("pair ", id, ": lease '", lease,
                                                  "' is not the pair's lease (it is leased to '", p->leased_by, "')"));
    if (p->lease_expires_at <= now())
      return fail(QueueOutcome::kConflict,
                  strcat("pair ", id, ": the lease expired at ", iso8601_utc(p->lease_expires_at),
                         "; get a new one with GET /api/annotate/next"));
    AnnotateStmt s(
        db_->db,
        "UPDATE pairs SET state = 'labelled', choice = ?, annotator = ?, labelled_at = ?, lease_token = NULL, "
        "leased_by = NULL, lease_expires_at = NULL WHERE id = ?",
        db_->where);
    s.bind(1, choice).bind(2, annotator.empty() ? p->leased_by : annotator).bind(3, now()).bind(4, id);
    s.step();
    return {};
  });
}

QueueOutcome PreferenceQueue::skip(int64_t id, const std::string& lease) {
  std::lock_guard<std::mutex> l(mu_);
  return transaction([&]() -> QueueOutcome {
    const auto p = db_->get(id);
    if (!p) return fail(QueueOutcome::kNotFound, strcat("pair ", id, " does not exist"));
    if (p->state != "leased" || p->lease_token != lease || p->lease_expires_at <= now())
      return fail(QueueOutcome::kConflict,
                  strcat("pair ", id, " is not leased with lease '", lease, "' (state ", p->state,
                         p->state == "leased" && p->lease_token == lease ? ", lease expired" : "", ")"));
    AnnotateStmt s(db_->db,
                   "UPDATE pairs SET state = 'skipped', annotator = leased_by, lease_token = NULL, leased_by = NULL, "
                   "lease_expires_at = NULL WHERE id = ?",
                   db_->where);
    s.bind(1, id);
    s.step();
    return {};
  });
}

QueueOutcome PreferenceQueue::undo(int64_t id, const std::string& annotator) {
  if (annotator.empty()) return fail(QueueOutcome::kInvalid, strcat("undo of pair ", id, ": annotator is required"));
  std::lock_guard<std::mutex> l(mu_);
  return transaction([&]() -> QueueOutcome {
    const auto p = db_->get(id);
    if (!p) return fail(QueueOutcome::kNotFound, strcat("pair ", id, " does not exist"));
    if (p->state != "labelled")
      return fail(QueueOutcome::kConflict,
                  strcat("pair ", id, " is not labelled (state ", p->state, "): nothing to undo"));
    if (p->annotator != annotator)
      return fail(QueueOutcome::kConflict, strcat("pair ", id, " was labelled by '", p->annotator, "', not '",
                                                  annotator, "': only that annotator can undo it"));
    AnnotateStmt s(
        db_->db, "UPDATE pairs SET state = 'pending', choice = NULL, annotator = NULL, labelled_at = NULL WHERE id = ?",
        db_->where);
    s.bind(1, id);
    s.step();
    return {};
  });
}

std::optional<PreferencePair> PreferenceQueue::get(int64_t id) {
  std::lock_guard<std::mutex> l(mu_);
  return db_->get(id);
}

PreferenceStats PreferenceQueue::stats() {
  std::lock_guard<std::mutex> l(mu_);
  return transaction([&] {
    release_expired_locked();
    PreferenceStats st;
    for (const char* s : {"pending", "leased", "labelled", "skipped"}) st.by_state[s] = 0;
    {
      AnnotateStmt s(db_->db, "SELECT state, COUNT(*) FROM pairs GROUP BY state", db_->where);
      while (s.step()) {
        st.by_state[s.text(0)] = s.i64(1);
        st.total += s.i64(1);
      }
    }
    st.identical = db_->count("SELECT COUNT(*) FROM pairs WHERE identical = 1");
    AnnotateStmt s(db_->db,
                   "SELECT annotator, CASE WHEN state = 'skipped' THEN 'skipped' ELSE choice END, COUNT(*) FROM pairs "
                   "WHERE state IN ('labelled', 'skipped') AND annotator IS NOT NULL GROUP BY 1, 2",
                   db_->where);
    while (s.step()) st.by_annotator[s.text(0)][s.text(1)] = s.i64(2);
    return st;
  });
}

std::vector<PreferencePair> PreferenceQueue::labelled() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<PreferencePair> out;
  AnnotateStmt s(db_->db, strcat("SELECT ", kColumns, " FROM pairs WHERE state = 'labelled' ORDER BY id").c_str(),
                 db_->where);
  while (s.step()) out.push_back(read_pair(s));
  return out;
}

DpoExportReport PreferenceQueue::export_dpo(const std::string& out_path) {
  DpoExportReport r;
  std::string text;
  for (const auto& p : labelled()) {
    if (p.choice == "tie") {
      ++r.ties;
    } else if (p.choice == "both_bad") {
      ++r.both_bad;
    } else {
      text += dpo_row(p) + "\n";
      ++r.written;
    }
  }
  file::write_atomic(out_path, text);
  return r;
}

std::string iso8601_utc(double seconds) {
  const auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string dpo_row(const PreferencePair& p) {
  TRINITY_ASSERT(p.choice == "a" || p.choice == "b", "dpo_row: pair ", p.id, " has choice '", p.choice, "'");
  const json msgs = detail::parse_json(p.prompt, strcat("pair ", p.id, " prompt"));
  json prompt = json::array();
  if (msgs.is_array())
    for (const auto& m : msgs) {
      if (!m.is_object()) continue;
      prompt.push_back({{"role", m.value("role", std::string("user"))},
                        {"content", m.contains("content") ? m["content"] : json("")}});
    }
  if (!prompt.empty() && prompt.back()["role"] == "assistant") prompt.erase(prompt.size() - 1);
  const bool a = p.choice == "a";
  json row;
  row["message"] = std::move(prompt);  // Trinity's default format.messages_key
  row["chosen"] = json::array({{{"role", "assistant"}, {"content", a ? p.response_a : p.response_b}}});
  row["rejected"] = json::array({{{"role", "assistant"}, {"content", a ? p.response_b : p.response_a}}});
  row["lineage"] = {{"pair_id", p.id},
                    {"model_path", p.model_path},
                    {"model_version", p.model_version},
                    {"annotator", p.annotator},
                    {"labelled_at", iso8601_utc(p.labelled_at)}};
  return row.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace trinity::buffer
