// Explore-step leases in the buffer's sqlite file or PostgreSQL database (see step_claims.h). One
// claim is one short transaction (sqlite BEGIN IMMEDIATE; PostgreSQL a transaction holding the
// table's EXCLUSIVE lock), so two explorers never get the same step. Lease times are the database's
// clock on PostgreSQL (explorers on different machines agree) and the machine's on sqlite.
#include "buffer/step_claims.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "buffer/pg_session.h"
#include "buffer/pg_storage.h"
#include "buffer/sqlite_stmt.h"
#include "buffer/storage.h"
#include "core/error.h"
#include "core/log.h"

namespace trinity::buffer {

namespace {

using detail::Stmt;

// Seconds since the epoch as SQL text with millisecond precision (strcat's default 6 digits would
// round it to 10 s).
std::string secs(double t) {
  char b[40];
  std::snprintf(b, sizeof b, "%.3f", t);
  return b;
}

std::string lit(const std::string& s) {  // SQL string literal
  std::string o = "'";
  for (char c : s) {
    o += c;
    if (c == '\'') o += c;
  }
  o += '\'';
  return o;
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The claim decision, shared by both databases. `q` runs SQL returning the first column of the first
// row as text ("" = no row); `x` runs SQL without a result. Placeholders are inlined (numbers and
// sanitised owner names only). Runs inside the caller's transaction.
template <typename Query, typename Exec>
int64_t decide(Query&& q, Exec&& x, const std::string& t, const std::string& exp_table, const std::string& owner,
               int64_t max_step, double now, double lease_s, std::string* previous) {
  const std::string until = secs(now + lease_s);
  for (;;) {
    // A step whose owner's lease ran out, or one this owner held before it restarted.
    const std::string row = q(strcat("SELECT step || ' ' || owner FROM ", t, " WHERE state = 1 AND (lease_expires < ",
                                     secs(now), " OR owner = ", lit(owner), ") ORDER BY step LIMIT 1"));
    if (row.empty()) break;
    const size_t sp = row.find(' ');
    const int64_t step = std::stoll(row.substr(0, sp));
    const std::string was = row.substr(sp + 1);
    // Its experiences may already be in the buffer (the owner died between its write and its done
    // mark): then the step is done, not explored twice.
    const std::string landed = q(strcat("SELECT 1 FROM ", exp_table, " WHERE task_id LIKE '", step, "/%' LIMIT 1"));
    if (!landed.empty()) {
      x(strcat("UPDATE ", t, " SET state = 2 WHERE step = ", step));
      log::info("explorer ", owner, ": explore step ", step, " of ", was,
                " is already in the buffer; marked done without exploring it again");
      continue;
    }
    x(strcat("UPDATE ", t, " SET owner = ", lit(owner), ", lease_expires = ", until, " WHERE step = ", step));
    if (previous && was != owner) *previous = was;
    return step;
  }
  const std::string top = q(strcat("SELECT COALESCE(MAX(step), 0) FROM ", t));
  const int64_t next = (top.empty() ? 0 : std::stoll(top)) + 1;
  if (next <= max_step) {
    x(strcat("INSERT INTO ", t, " (step, owner, state, lease_expires) VALUES (", next, ", ", lit(owner), ", 1, ", until,
             ")"));
    return next;
  }
  const std::string done = q(strcat("SELECT COUNT(*) FROM ", t, " WHERE state = 2"));
  return (done.empty() ? 0 : std::stoll(done)) >= max_step ? -1 : 0;
}

class SqliteClaims final : public StepClaims {
 public:
  explicit SqliteClaims(const StorageConfig& c) : path_(sqlite_path_from_url(c.path)) {
    name_ = sql_table_name(c.name);
    t_ = strcat("\"", name_, "_explore_steps\"");
    exp_ = strcat("\"", name_, "\"");
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
      throw IoError("buffer", strcat("cannot open ", describe(), ": ", db_ ? sqlite3_errmsg(db_) : "out of memory"));
    sqlite3_busy_timeout(db_, 10000);
    tx([&] {
      x(strcat(
          "CREATE TABLE IF NOT EXISTS ", t_,
          " (step INTEGER PRIMARY KEY, owner TEXT NOT NULL, state INTEGER NOT NULL, lease_expires REAL NOT NULL)"));
      return 0;
    });
  }
  ~SqliteClaims() override { sqlite3_close(db_); }

  int64_t claim(const std::string& owner, int64_t max_step, double lease_s, std::string* previous) override {
    return tx([&] {
      const bool has_exp =
          !q(strcat("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '", name_, "'")).empty();
      const std::string et = has_exp ? exp_ : std::string("(SELECT '' AS task_id WHERE 0)");
      return decide([&](const std::string& s) { return q(s); }, [&](const std::string& s) { x(s); }, t_, et, owner,
                    max_step, wall_now(), lease_s, previous);
    });
  }
  bool renew(int64_t step, const std::string& owner, double lease_s) override {
    return tx([&] {
             x(strcat("UPDATE ", t_, " SET lease_expires = ", secs(wall_now() + lease_s), " WHERE step = ", step,
                      " AND state = 1 AND owner = ", lit(owner)));
             return sqlite3_changes(db_) > 0 ? 1 : 0;
           }) != 0;
  }
  void done(int64_t step, const std::string& owner) override {
    tx([&] {
      x(strcat("UPDATE ", t_, " SET state = 2 WHERE step = ", step, " AND owner = ", lit(owner)));
      return 0;
    });
  }
  ClaimStats stats() override {
    ClaimStats s;
    tx([&] {
      s.claimed = std::stoll(q(strcat("SELECT COUNT(*) FROM ", t_)));
      s.done = std::stoll(q(strcat("SELECT COUNT(*) FROM ", t_, " WHERE state = 2")));
      return 0;
    });
    return s;
  }
  std::string describe() const override { return strcat("explore-step leases ", t_, " in sqlite ", path_); }

 private:
  template <typename Fn>
  int64_t tx(Fn&& fn) {
    return detail::write_transaction(db_, describe(), "buffer", 50, 0.1, fn);
  }
  std::string q(const std::string& sql) {
    Stmt st(db_, sql, describe());
    return st.step() ? st.text(0) : std::string();
  }
  void x(const std::string& sql) { detail::sqlite_exec(db_, sql, describe()); }
  std::string path_, name_, t_, exp_;
  sqlite3* db_ = nullptr;
};

class PgClaims final : public StepClaims {
 public:
  explicit PgClaims(const StorageConfig& c) : db_(c.path, "explore-step leases in PostgreSQL") {
    const std::string name = sql_table_name(c.name, true);
    t_ = strcat("\"", name, "_explore_steps\"");
    exp_ = strcat("\"", name, "\"");
    db_.tx([&] {
      db_.exec("SELECT pg_advisory_xact_lock(7177001)");  // racing creators agree
      db_.exec(strcat("CREATE TABLE IF NOT EXISTS ", t_,
                      " (step BIGINT PRIMARY KEY, owner TEXT NOT NULL, state INTEGER NOT NULL, lease_expires DOUBLE "
                      "PRECISION NOT NULL)"));
    });
  }
  int64_t claim(const std::string& owner, int64_t max_step, double lease_s, std::string* previous) override {
    int64_t out = 0;
    db_.tx([&] {
      db_.exec(strcat("LOCK TABLE ", t_, " IN EXCLUSIVE MODE"));
      const double now = std::stod(db_.exec("SELECT extract(epoch from clock_timestamp())::float8").first());
      const bool has_exp = !db_.exec(strcat("SELECT to_regclass('", exp_, "')")).first().empty();
      const std::string et = has_exp ? exp_ : "(SELECT ''::text AS task_id WHERE false) AS none";
      out = decide([&](const std::string& q) { return db_.exec(q).first(); },
                   [&](const std::string& q) { db_.exec(q); }, t_, et, owner, max_step, now, lease_s, previous);
    });
    return out;
  }
  bool renew(int64_t step, const std::string& owner, double lease_s) override {
    int64_t n = 0;
    db_.tx([&] {
      n = db_.exec(strcat("UPDATE ", t_, " SET lease_expires = extract(epoch from clock_timestamp()) + ", lease_s,
                          " WHERE step = ", step, " AND state = 1 AND owner = ", lit(owner)))
              .changed;
    });
    return n > 0;
  }
  void done(int64_t step, const std::string& owner) override {
    db_.tx([&] { db_.exec(strcat("UPDATE ", t_, " SET state = 2 WHERE step = ", step, " AND owner = ", lit(owner))); });
  }
  ClaimStats stats() override {
    ClaimStats s;
    db_.tx([&] {
      s.claimed = std::stoll(db_.exec(strcat("SELECT COUNT(*) FROM ", t_)).first());
      s.done = std::stoll(db_.exec(strcat("SELECT COUNT(*) FROM ", t_, " WHERE state = 2")).first());
    });
    return s;
  }
  std::string describe() const override { return strcat("explore-step leases ", t_, " in PostgreSQL"); }

 private:
  PgSession db_;
  std::string t_, exp_;
};

}  // namespace

std::unique_ptr<StepClaims> open_step_claims(const StorageConfig& buffer) {
  if (buffer.storage_type != "sql" && buffer.storage_type != "sqlite")
    throw ConfigError("config", strcat("several explorers share their tasks through the experience buffer's database: "
                                       "buffer.trainer_input.experience_buffer.storage_type must be sql (a sqlite file "
                                       "or a postgresql:// URL), got '",
                                       buffer.storage_type, "'"));
  if (is_postgres_url(buffer.path)) return std::make_unique<PgClaims>(buffer);
  return std::make_unique<SqliteClaims>(buffer);
}

}  // namespace trinity::buffer
