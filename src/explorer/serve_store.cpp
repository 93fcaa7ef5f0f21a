// ServeStore over SQLite and the choice of store (see serve_store.h). Token arrays are stored as native little-endian
// blobs.
#include "explorer/serve_store.h"

#include <sqlite3.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "buffer/pg_storage.h"
#include "core/error.h"

namespace trinity::explorer {

namespace {

using enum detail::CallState;

// One prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK)
      throw IoError("serve", strcat("sqlite: ", sqlite3_errmsg(db), " in: ", sql));
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& text(int i, const std::string& s) {
    sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& i64(int i, int64_t v) {
    sqlite3_bind_int64(st_, i, v);
    return *this;
  }
  Stmt& f64(int i, double v) {
    sqlite3_bind_double(st_, i, v);
    return *this;
  }
  template <class T>
  Stmt& blob(int i, const std::vector<T>& v) {
    sqlite3_bind_blob(st_, i, v.data(), static_cast<int>(v.size() * sizeof(T)), SQLITE_TRANSIENT);
    return *this;
  }
  bool step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw IoError("serve", strcat("sqlite: ", sqlite3_errmsg(db_)));
  }
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  std::string col_text(int i) const {
    const auto* p = sqlite3_column_text(st_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(st_, i))) : "";
  }
  int64_t col_i64(int i) const { return sqlite3_column_int64(st_, i); }
  double col_f64(int i) const { return sqlite3_column_double(st_, i); }
  template <class T>
  std::vector<T> col_blob(int i) const {
    const void* p = sqlite3_column_blob(st_, i);
    const size_t n = static_cast<size_t>(sqlite3_column_bytes(st_, i)) / sizeof(T);
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), p, n * sizeof(T));
    return v;
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

class SqliteServeStore final : public ServeStore {
 public:
  explicit SqliteServeStore(const std::string& path);
  ~SqliteServeStore() override;
  void record(const tok::RecordedCall& c) override;
  Feedback feedback(const std::vector<std::string>& msg_ids, double reward, const std::string& task_id,
                    int64_t run_id) override;
  std::vector<Group> ready() override;
  void mark_committed(const std::vector<std::pair<std::string, int64_t>>& rows) override;
  int64_t drop_pending_older_than(double cutoff) override;
  Counts counts() override;
  int64_t get_meta(const std::string& key, int64_t def) override;
  void set_meta(const std::string& key, int64_t value) override;
  std::string describe() const override { return "serve history " + path_; }

 private:
  void exec(const char* sql);
  std::mutex mu_;
  sqlite3* db_ = nullptr;
  std::string path_;
};

SqliteServeStore::SqliteServeStore(const std::string& path) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string err = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw IoError("serve", strcat("cannot open the serve history ", path, ": ", err));
  }
  sqlite3_busy_timeout(db_, 10000);
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=NORMAL");
  exec(
      "CREATE TABLE IF NOT EXISTS calls (msg_id TEXT NOT NULL, choice INTEGER NOT NULL, created REAL NOT NULL, "
      "version INTEGER NOT NULL, finish TEXT NOT NULL, prompt BLOB, ids BLOB, logprobs BLOB, "
      "state INTEGER NOT NULL DEFAULT 0, reward REAL, task_id TEXT, run_id INTEGER, "
      "PRIMARY KEY (msg_id, choice))");
  exec("CREATE INDEX IF NOT EXISTS calls_state ON calls (state, created)");
  exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
}

SqliteServeStore::~SqliteServeStore() {
  if (db_) sqlite3_close(db_);
}

void SqliteServeStore::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string e = err ? err : "unknown error";
    sqlite3_free(err);
    throw IoError("serve", strcat("sqlite (", path_, "): ", e, " in: ", sql));
  }
}

void SqliteServeStore::record(const tok::RecordedCall& c) {
  std::lock_guard<std::mutex> l(mu_);
  Stmt st(db_,
          "INSERT OR REPLACE INTO calls (msg_id, choice, created, version, finish, prompt, ids, logprobs, state) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)");
  st.text(1, c.id).i64(2, c.choice).f64(3, c.start).i64(4, c.model_version).text(5, c.finish_reason);
  st.blob(6, c.prompt_ids).blob(7, c.ids).blob(8, c.logprobs);
  st.step();
}

ServeStore::Feedback SqliteServeStore::feedback(const std::vector<std::string>& msg_ids, double reward,
                                                const std::string& task_id, int64_t run_id) {
  std::lock_guard<std::mutex> l(mu_);
  Feedback out;
  exec("BEGIN IMMEDIATE");
  try {
    Stmt st(db_, "UPDATE calls SET state = 1, reward = ?, task_id = ?, run_id = ? WHERE msg_id = ? AND state < 2");
    for (const auto& id : msg_ids) {
      st.reset();
      st.f64(1, reward).text(2, task_id).i64(3, run_id).text(4, id);
      st.step();
      const int n = sqlite3_changes(db_);
      if (n == 0) out.unknown.push_back(id);
      out.updated += n;
    }
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
  return out;
}

std::vector<ServeStore::Group> SqliteServeStore::ready() {
  std::lock_guard<std::mutex> l(mu_);
  Stmt st(db_,
          "SELECT msg_id, choice, created, version, finish, prompt, ids, logprobs, reward, task_id, run_id FROM calls "
          "WHERE state = 1 ORDER BY task_id, run_id, created, msg_id, choice");
  std::vector<Group> out;
  std::map<std::pair<std::string, int64_t>, size_t> at;
  while (st.step()) {
    tok::RecordedCall c;
    c.id = st.col_text(0);
    c.choice = st.col_i64(1);
    c.start = st.col_f64(2);
    c.model_version = st.col_i64(3);
    c.finish_reason = st.col_text(4);
    c.prompt_ids = st.col_blob<int32_t>(5);
    c.ids = st.col_blob<int32_t>(6);
    c.logprobs = st.col_blob<float>(7);
    c.endpoint = "serve";
    const auto key = std::make_pair(st.col_text(9), st.col_i64(10));
    auto it = at.find(key);
    if (it == at.end()) {
      it = at.emplace(key, out.size()).first;
      out.push_back(Group{key.first, key.second, 0.0, {}});
    }
    out[it->second].reward = st.col_f64(8);
    out[it->second].calls.push_back(std::move(c));
  }
  return out;
}

void SqliteServeStore::mark_committed(const std::vector<std::pair<std::string, int64_t>>& rows) {
  std::lock_guard<std::mutex> l(mu_);
  exec("BEGIN IMMEDIATE");
  try {
    Stmt st(db_,
            "UPDATE calls SET state = 2, prompt = NULL, ids = NULL, logprobs = NULL WHERE msg_id = ? AND choice = ?");
    for (const auto& [id, choice] : rows) {
      st.reset();
      st.text(1, id).i64(2, choice);
      st.step();
    }
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

int64_t SqliteServeStore::drop_pending_older_than(double cutoff) {
  std::lock_guard<std::mutex> l(mu_);
  Stmt st(db_, "DELETE FROM calls WHERE state = 0 AND created < ?");
  st.f64(1, cutoff);
  st.step();
  return sqlite3_changes(db_);
}

ServeStore::Counts SqliteServeStore::counts() {
  std::lock_guard<std::mutex> l(mu_);
  Stmt st(db_, "SELECT state, COUNT(*) FROM calls GROUP BY state");
  Counts c;
  while (st.step()) {
    const int64_t s = st.col_i64(0), n = st.col_i64(1);
    (s == kRecorded ? c.recorded : s == kReady ? c.ready : c.committed) += n;
  }
  return c;
}

int64_t SqliteServeStore::get_meta(const std::string& key, int64_t def) {
  std::lock_guard<std::mutex> l(mu_);
  Stmt st(db_, "SELECT value FROM meta WHERE key = ?");
  st.text(1, key);
  return st.step() ? st.col_i64(0) : def;
}

void SqliteServeStore::set_meta(const std::string& key, int64_t value) {
  std::lock_guard<std::mutex> l(mu_);
  Stmt st(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
  st.text(1, key).i64(2, value);
  st.step();
}

}  // namespace

std::unique_ptr<ServeStore> open_serve_store(const std::string& where, const std::string& table) {
  if (buffer::is_postgres_url(where)) return open_pg_serve_store(where, table);
  return std::make_unique<SqliteServeStore>(where);
}

}  // namespace trinity::explorer
