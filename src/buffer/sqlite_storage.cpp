// SQLite experience storage (see sqlite_storage.h). One connection per object, guarded by a mutex;
// busy_timeout plus a bounded retry loop handles other processes holding the write lock. Timestamps are
// wall-clock seconds (shared between processes). synchronous=NORMAL in WAL mode: a killed process never
// loses a committed transaction (only an OS crash / power loss can drop the last few).
#include "buffer/sqlite_storage.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "buffer/json_util.h"
#include "buffer/replay.h"
#include "buffer/sqlite_stmt.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"

namespace trinity::buffer {

using detail::json;

namespace {

using enum detail::RowStatus;

using Busy = detail::SqliteBusy;
using detail::Stmt;

std::string random_lease() {
  return strcat("L", ::getpid(), "-", random_suffix(), random_suffix());
}

}  // namespace

struct SqliteStorage::Db {
  sqlite3* db = nullptr;
  std::mutex mu;
  ~Db() { if (db) sqlite3_close_v2(db); }
  void exec(const std::string& sql, const std::string& where) { detail::sqlite_exec(db, sql, where); }
};

template <typename Fn>
auto SqliteStorage::transaction(Fn&& fn) {
  const int tries = static_cast<int>(std::max<int64_t>(1, cfg_.max_retry_times + 1));
  return detail::write_transaction(
      db_->db, describe(), "buffer", tries, cfg_.max_retry_interval, std::forward<Fn>(fn),
      [&](int attempt) { log::warn(describe(), ": database busy, retry ", attempt, "/", tries - 1); });
}

std::vector<std::string> sqlite_buffer_names(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    throw IoError("buffer", strcat("cannot open sqlite file '", path, "': ", msg));
  }
  sqlite3_busy_timeout(db, 10000);
  std::vector<std::string> names;
  try {
    // A buffer is a table with a matching <name>_payload table.
    Stmt st(db, "SELECT m.name FROM sqlite_master m JOIN sqlite_master p ON p.name = m.name || '_payload' "
                "WHERE m.type='table' AND p.type='table' ORDER BY m.name", path);
    while (st.step(path)) names.push_back(st.text(0));
  } catch (const Busy&) {
    sqlite3_close_v2(db);
    throw IoError("buffer", strcat("sqlite file '", path, "' is locked"));
  } catch (...) {
    sqlite3_close_v2(db);
    throw;
  }
  sqlite3_close_v2(db);
  return names;
}

SqliteStorage::SqliteStorage(const StorageConfig& cfg)
    : cfg_(cfg), db_(std::make_unique<Db>()),
      rng_(static_cast<uint64_t>(cfg.data_selector.seed) ^ (static_cast<uint64_t>(::getpid()) << 20)) {
  path_ = sqlite_path_from_url(cfg_.path);
  if (path_.empty()) throw ConfigError("buffer", strcat("sqlite buffer '", cfg_.name, "': path is empty"));
  table_ = sql_table_name(cfg_.name);
  owner_ = cfg_.reader_id.empty() ? cfg_.name : cfg_.reader_id;
  if (cfg_.replay_buffer.enable) check_priority_fn(cfg_.replay_buffer);
  const int rc = sqlite3_open_v2(path_.c_str(), &db_->db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK)
    throw IoError("buffer", strcat("cannot open sqlite buffer '", path_, "': ",
                                   db_->db ? sqlite3_errmsg(db_->db) : "out of memory"));
  sqlite3_busy_timeout(db_->db, 10000);
  for (int attempt = 0;; ++attempt) {
    try {
      db_->exec("PRAGMA journal_mode=WAL", describe());
      // Checkpoint every 4096 pages (16 MiB) instead of 1000: 1k-token experiences are ~9 KB each, and
      // fewer checkpoints (each with an fsync) roughly double batched write throughput.
      db_->exec("PRAGMA wal_autocheckpoint=4096", describe());
      db_->exec("PRAGMA synchronous=NORMAL", describe());
      break;
    } catch (const Busy&) {
      if (attempt > 50) throw IoError("buffer", strcat(describe(), ": cannot switch to WAL mode (locked)"));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  const std::string t = "\"" + table_ + "\"";
  transaction([&] {
    // Small, often-updated columns (Trinity's names) in the main table; the payload, written once, in
    // <name>_payload keyed by the same id, so leasing and acking never rewrite kilobytes of arrays.
    db_->exec(strcat("CREATE TABLE IF NOT EXISTS ", t, " ("
                     "id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp REAL NOT NULL, "
                     "task_id TEXT NOT NULL, run_id INTEGER NOT NULL, msg_id TEXT NOT NULL, "
                     "uid TEXT NOT NULL UNIQUE, rid TEXT NOT NULL, model_version INTEGER NOT NULL, "
                     "reward REAL, status INTEGER NOT NULL, consumed INTEGER NOT NULL DEFAULT 0, "
                     "lease TEXT, owner TEXT, lease_expires REAL, available_at REAL NOT NULL DEFAULT 0, "
                     "schema_version INTEGER NOT NULL)"),
             describe());
    db_->exec(strcat("CREATE TABLE IF NOT EXISTS \"", table_, "_payload\" ("
                     "id INTEGER PRIMARY KEY, meta TEXT NOT NULL, arrays BLOB NOT NULL)"),
             describe());
    db_->exec(strcat("CREATE INDEX IF NOT EXISTS \"", table_, "_order\" ON ", t, " (status, consumed, id)"), describe());
    db_->exec(strcat("CREATE INDEX IF NOT EXISTS \"", table_, "_lease\" ON ", t, " (lease) WHERE lease IS NOT NULL"),
              describe());
  });
}

SqliteStorage::~SqliteStorage() = default;

std::string SqliteStorage::describe() const { return strcat("sqlite buffer '", path_, "' table '", table_, "'"); }

bool SqliteStorage::write(const std::vector<Experience>& batch, double) {
  if (batch.empty()) return true;
  // Encode outside the lock and the transaction: keeps the write lock short.
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(batch.size());
  for (const auto& e : batch) enc.emplace_back(experience_to_json(e, false), encode_arrays(e));
  std::lock_guard<std::mutex> lock(db_->mu);
  const double ts = wall_seconds();
  const int64_t ignored = transaction([&] {
    Stmt st(db_->db, strcat("INSERT INTO \"", table_, "\" (timestamp, task_id, run_id, msg_id, uid, rid, "
                            "model_version, reward, status, consumed, schema_version) "
                            "VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(uid) DO NOTHING"),
            describe());
    Stmt pay(db_->db, strcat("INSERT INTO \"", table_, "_payload\" (id, meta, arrays) VALUES (?,?,?)"), describe());
    int64_t dup = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const Experience& e = batch[i];
      st.bind(1, ts).bind(2, e.eid.tid()).bind(3, e.eid.run).bind(4, e.eid.suffix).bind(5, e.eid.uid());
      st.bind(6, e.eid.rid()).bind(7, e.model_version);
      if (e.reward) st.bind(8, *e.reward); else st.bind_null(8);
      st.bind(9, static_cast<int64_t>(e.reward ? kReady : kPending)).bind(10, e.use_count);
      st.bind(11, static_cast<int64_t>(kSchemaVersion));
      st.step(describe());
      const bool inserted = sqlite3_changes(db_->db) > 0;
      st.reset();
      if (!inserted) {
        ++dup;
        continue;
      }
      pay.bind(1, static_cast<int64_t>(sqlite3_last_insert_rowid(db_->db))).bind(2, enc[i].first).bind_blob(3, enc[i].second);
      pay.step(describe());
      pay.reset();
    }
    return dup;
  });
  if (ignored) log::warn(describe(), ": ", ignored, " experience(s) with an already stored uid were ignored");
  return true;
}

bool SqliteStorage::try_lease_locked(const ReadRequest& req, bool partial, ReadResult& out) {
  const std::string t = "\"" + table_ + "\"";
  return transaction([&]() -> bool {
    const double now = wall_seconds();
    // Leases whose reader died (or is too slow) go back to ready.
    Stmt(db_->db, strcat("UPDATE ", t, " SET status=1, lease=NULL, owner=NULL, lease_expires=NULL, "
                         "consumed=MAX(consumed-1,0) WHERE status=2 AND lease_expires < ?"), describe())
        .bind(1, now).step(describe());
    std::string filter = "status=1 AND available_at <= ?";
    if (req.min_model_version) filter += " AND model_version >= ?";
    std::vector<int64_t> ids;
    const auto& rb = cfg_.replay_buffer;
    if (!rb.enable) {
      Stmt sel(db_->db, strcat("SELECT id FROM ", t, " WHERE ", filter, " ORDER BY consumed ASC, id ASC LIMIT ?"),
               describe());
      int k = 1;
      sel.bind(k++, now);
      if (req.min_model_version) sel.bind(k++, *req.min_model_version);
      sel.bind(k++, static_cast<int64_t>(req.batch_size));
      while (sel.step(describe())) ids.push_back(sel.i64(0));
    } else if (rb.priority_fn == "linear_decay" || rb.sigma <= 0) {
      // Deterministic priority: let SQLite sort (no per-row transfer); the use-count limit of
      // decay_limit_randomization is a filter here and a retirement at ack.
      const bool limited = rb.priority_fn == "decay_limit_randomization" && rb.use_count_limit > 0;
      Stmt sel(db_->db, strcat("SELECT id FROM ", t, " WHERE ", filter, limited ? " AND consumed < ?" : "",
                               " ORDER BY (model_version - ? * consumed) DESC, id DESC LIMIT ?"),
               describe());
      int k = 1;
      sel.bind(k++, now);
      if (req.min_model_version) sel.bind(k++, *req.min_model_version);
      if (limited) sel.bind(k++, rb.use_count_limit);
      sel.bind(k++, rb.decay);
      sel.bind(k++, static_cast<int64_t>(req.batch_size));
      while (sel.step(describe())) ids.push_back(sel.i64(0));
    } else {
      struct Cand {
        double prio;
        int64_t id;
      };
      std::vector<Cand> cands;
      std::vector<int64_t> retire;
      Stmt sel(db_->db, strcat("SELECT id, model_version, consumed FROM ", t, " WHERE ", filter), describe());
      int k = 1;
      sel.bind(k++, now);
      if (req.min_model_version) sel.bind(k++, *req.min_model_version);
      while (sel.step(describe())) {
        const Priority p = replay_priority(rb, sel.i64(1), sel.i64(2), rng_);
        if (p.keep)
          cands.push_back({p.value, sel.i64(0)});
        else
          retire.push_back(sel.i64(0));
      }
      if (!retire.empty()) {
        Stmt up(db_->db, strcat("UPDATE ", t, " SET status=3 WHERE id=?"), describe());
        for (int64_t id : retire) {
          up.bind(1, id).step(describe());
          up.reset();
        }
      }
      std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
        return a.prio != b.prio ? a.prio > b.prio : a.id > b.id;
      });
      for (size_t i = 0; i < cands.size() && i < req.batch_size; ++i) ids.push_back(cands[i].id);
    }
    if (ids.empty() || (ids.size() < req.batch_size && !partial)) return false;
    const std::string lease = random_lease();
    Stmt up(db_->db, strcat("UPDATE ", t, " SET status=2, lease=?, owner=?, lease_expires=?, consumed=consumed+1 "
                            "WHERE id=?"), describe());
    for (int64_t id : ids) {
      up.bind(1, lease).bind(2, owner_).bind(3, now + cfg_.lease_timeout).bind(4, id).step(describe());
      up.reset();
    }
    Stmt get(db_->db, strcat("SELECT m.id, p.meta, p.arrays, m.reward, m.consumed, m.schema_version FROM ", t,
                             " m JOIN \"", table_, "_payload\" p ON p.id = m.id WHERE m.id=?"),
             describe());
    out.batch.clear();
    for (int64_t id : ids) {
      get.bind(1, id);
      if (!get.step(describe())) throw IoError("buffer", strcat(describe(), ": row ", id, " vanished"));
      const std::string where = strcat(describe(), " row ", id);
      if (get.i64(5) > kSchemaVersion)
        throw ValueError("buffer", strcat(where, ": schema_version ", get.i64(5), " is newer than this build (",
                                          kSchemaVersion, ")"));
      out.batch.push_back(detail::read_experience(get, 1, where));
      get.reset();
    }
    out.lease = lease;
    return true;
  });
}

ReadResult SqliteStorage::read(const ReadRequest& req) {
  return poll_read(req, [&](bool partial, ReadResult& r) {
    std::lock_guard<std::mutex> lock(db_->mu);
    if (!try_lease_locked(req, partial, r)) return false;
    my_leases_.insert(r.lease);
    return true;
  });
}

// A lease is held until a reader reclaims it after expiry (that clears `lease`), so a late ack of an
// expired but unreclaimed lease still consumes the batch: nobody else can have it.
bool SqliteStorage::ack_in_transaction(const std::string& lease) {
  // With reuse, a row goes back to ready after the cooldown unless it reached use_count_limit.
  const auto& rb = cfg_.replay_buffer;
  const bool reuse = rb.enable && rb.reuse_cooldown_time.has_value();
  const int64_t limit = rb.priority_fn == "decay_limit_randomization" ? rb.use_count_limit : 0;
  Stmt st(db_->db, strcat("UPDATE \"", table_, "\" SET status=CASE WHEN ? AND (? <= 0 OR consumed < ?) THEN 1 "
                          "ELSE 3 END, available_at=?, lease=NULL, owner=NULL, lease_expires=NULL "
                          "WHERE lease=? AND status=2"), describe());
  st.bind(1, static_cast<int64_t>(reuse))
      .bind(2, limit)
      .bind(3, limit)
      .bind(4, reuse ? wall_seconds() + *rb.reuse_cooldown_time : 0.0)
      .bind(5, lease)
      .step(describe());
  return sqlite3_changes(db_->db) > 0;
}

bool SqliteStorage::ack(const std::string& lease) {
  std::lock_guard<std::mutex> lock(db_->mu);
  const bool held = transaction([&] { return ack_in_transaction(lease); });
  my_leases_.erase(lease);
  return held;
}

bool SqliteStorage::renew(const std::string& lease) {
  std::lock_guard<std::mutex> lock(db_->mu);
  return transaction([&] {
    Stmt(db_->db, strcat("UPDATE \"", table_, "\" SET lease_expires=? WHERE lease=? AND status=2"), describe())
        .bind(1, wall_seconds() + cfg_.lease_timeout)
        .bind(2, lease)
        .step(describe());
    return sqlite3_changes(db_->db) > 0;
  });
}

void SqliteStorage::release(const std::string& lease) {
  std::lock_guard<std::mutex> lock(db_->mu);
  transaction([&] {
    Stmt(db_->db, strcat("UPDATE \"", table_, "\" SET status=1, lease=NULL, owner=NULL, lease_expires=NULL, "
                         "consumed=MAX(consumed-1,0) WHERE lease=? AND status=2"), describe())
        .bind(1, lease).step(describe());
  });
  my_leases_.erase(lease);
}

size_t SqliteStorage::set_reward(const std::vector<std::string>& uids, double reward) {
  std::lock_guard<std::mutex> lock(db_->mu);
  return transaction([&] {
    Stmt st(db_->db, strcat("UPDATE \"", table_, "\" SET reward=?, status=1 WHERE uid=? AND status=0"), describe());
    size_t n = 0;
    for (const auto& uid : uids) {
      st.bind(1, reward).bind(2, uid).step(describe());
      n += static_cast<size_t>(sqlite3_changes(db_->db));
      st.reset();
    }
    return n;
  });
}

size_t SqliteStorage::set_group_reward(const std::string& group_id, double reward) {
  std::lock_guard<std::mutex> lock(db_->mu);
  return transaction([&] {
    Stmt(db_->db, strcat("UPDATE \"", table_, "\" SET reward=?, status=1 WHERE status=0 AND (task_id=? OR rid=?)"),
         describe())
        .bind(1, reward).bind(2, group_id).bind(3, group_id).step(describe());
    return static_cast<size_t>(sqlite3_changes(db_->db));
  });
}

StorageStats SqliteStorage::stats() {
  std::lock_guard<std::mutex> lock(db_->mu);
  StorageStats s;
  const std::string t = "\"" + table_ + "\"";
  // Count expired leases as ready: they are given back on the next read.
  Stmt st(db_->db, strcat("SELECT CASE WHEN status=2 AND lease_expires < ? THEN 1 ELSE status END AS s, count(*) "
                          "FROM ", t, " GROUP BY s"), describe());
  st.bind(1, wall_seconds());
  while (st.step(describe())) {
    const int64_t n = st.i64(1);
    s.total += n;
    switch (st.i64(0)) {
      case kPending: s.pending += n; break;
      case kReady: s.ready += n; break;
      case kLeased: s.leased += n; break;
      default: s.consumed += n; break;
    }
  }
  Stmt mv(db_->db, strcat("SELECT model_version, count(*) FROM ", t, " GROUP BY model_version"), describe());
  while (mv.step(describe())) s.by_model_version[mv.i64(0)] = mv.i64(1);
  Stmt rw(db_->db, strcat("SELECT reward FROM ", t, " WHERE reward IS NOT NULL"), describe());
  while (rw.step(describe())) s.rewards.push_back(rw.f64(0));
  return s;
}

std::vector<Experience> SqliteStorage::scan(int64_t offset, int64_t limit) {
  std::lock_guard<std::mutex> lock(db_->mu);
  Stmt st(db_->db, strcat("SELECT m.id, p.meta, p.arrays, m.reward, m.consumed FROM \"", table_, "\" m JOIN \"",
                          table_, "_payload\" p ON p.id = m.id ORDER BY m.id LIMIT ? OFFSET ?"), describe());
  st.bind(1, limit).bind(2, offset);
  std::vector<Experience> out;
  while (st.step(describe())) {
    out.push_back(detail::read_experience(st, 1, strcat(describe(), " row ", st.i64(0))));
  }
  return out;
}

std::string SqliteStorage::state() {
  std::lock_guard<std::mutex> lock(db_->mu);
  json j = {{"kind", "sqlite"}, {"owner", owner_}, {"leases", json::array()}};
  for (const auto& l : my_leases_) j["leases"].push_back(l);
  return j.dump();
}

void SqliteStorage::load_state(const std::string& state) {
  const json j = detail::parse_json(state, describe() + " state");
  if (!j.is_object() || j.value("kind", "") != "sqlite" || !j.contains("leases"))
    throw ValueError("buffer", strcat(describe(), ": state is not a sqlite reader state: ", state));
  std::vector<std::string> covered;
  for (const auto& l : j.at("leases")) covered.push_back(l.get<std::string>());
  const std::string owner = j.value("owner", owner_);
  std::lock_guard<std::mutex> lock(db_->mu);
  transaction([&] {
    // The checkpoint holding this state trained on these leases: consume them for good (idempotent).
    for (const auto& l : covered) ack_in_transaction(l);
    // Any other lease of this reader belongs to the dead previous run: give it back now.
    Stmt(db_->db, strcat("UPDATE \"", table_, "\" SET status=1, lease=NULL, owner=NULL, lease_expires=NULL, "
                         "consumed=MAX(consumed-1,0) WHERE status=2 AND owner=?"), describe())
        .bind(1, owner).step(describe());
  });
  my_leases_.clear();
}

}  // namespace trinity::buffer
