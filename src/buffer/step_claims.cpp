// Explore-step leases in the buffer's sqlite file or PostgreSQL database (see step_claims.h). One
// claim is one short transaction (sqlite BEGIN IMMEDIATE; PostgreSQL a transaction holding the
// table's EXCLUSIVE lock), so two explorers never get the same step. Lease times are the database's
// clock on PostgreSQL (explorers on different machines agree) and the machine's on sqlite.
#include "buffer/step_claims.h"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <thread>

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
  explicit PgClaims(const StorageConfig& c) : url_(libpq_url(c.path)) {
    const std::string name = sql_table_name(c.name, true);
    t_ = strcat("\"", name, "_explore_steps\"");
    exp_ = strcat("\"", name, "\"");
    tx([&] {
      x("SELECT pg_advisory_xact_lock(7177001)");  // racing creators agree
      x(strcat("CREATE TABLE IF NOT EXISTS ", t_,
               " (step BIGINT PRIMARY KEY, owner TEXT NOT NULL, state INTEGER NOT NULL, lease_expires DOUBLE PRECISION "
               "NOT NULL)"));
      return 0;
    });
  }
  ~PgClaims() override {
    if (c_) PQfinish(c_);
  }
  int64_t claim(const std::string& owner, int64_t max_step, double lease_s, std::string* previous) override {
    return tx([&] {
      x(strcat("LOCK TABLE ", t_, " IN EXCLUSIVE MODE"));
      const double now = std::stod(q("SELECT extract(epoch from clock_timestamp())::float8"));
      const bool has_exp = !q(strcat("SELECT to_regclass('", exp_, "')")).empty();
      const std::string et = has_exp ? exp_ : "(SELECT ''::text AS task_id WHERE false) AS none";
      return decide([&](const std::string& s) { return q(s); }, [&](const std::string& s) { x(s); }, t_, et, owner,
                    max_step, now, lease_s, previous);
    });
  }
  bool renew(int64_t step, const std::string& owner, double lease_s) override {
    return tx([&] {
             return pg(strcat("UPDATE ", t_, " SET lease_expires = extract(epoch from clock_timestamp()) + ", lease_s,
                              " WHERE step = ", step, " AND state = 1 AND owner = ", lit(owner)),
                       true) == "1"
                        ? 1
                        : 0;
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
  std::string describe() const override { return strcat("explore-step leases ", t_, " in PostgreSQL"); }

 private:
  struct Lost {
    std::string msg;
  };
  // Runs fn in a transaction, reconnecting with backoff for up to 60 s when the server goes away.
  template <typename Fn>
  int64_t tx(Fn&& fn) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (int attempt = 1;; ++attempt) {
      try {
        if (!c_ || PQstatus(c_) != CONNECTION_OK) {
          if (c_) PQfinish(c_);
          c_ = PQconnectdb(url_.c_str());
          if (PQstatus(c_) != CONNECTION_OK) throw Lost{PQerrorMessage(c_)};
          PQsetNoticeProcessor(
              c_, [](void*, const char*) {}, nullptr);
        }
        x("BEGIN");
        const int64_t r = fn();
        x("COMMIT");
        return r;
      } catch (const Lost& e) {
        if (std::chrono::steady_clock::now() > end)
          throw IoError("buffer", strcat(describe(), ": the database is unreachable: ", e.msg));
        if (attempt == 1) log::warn(describe(), ": database connection lost (", e.msg, "); reconnecting");
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(2000, 50 << std::min(attempt, 6))));
      }
    }
  }
  // One statement; returns the first column of the first row ("" = none), or with `count` the
  // number of rows it changed.
  std::string pg(const std::string& sql, bool count = false) {
    PGresult* r = PQexec(c_, sql.c_str());
    const ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      const std::string msg = PQerrorMessage(c_);
      PQclear(r);
      if (PQstatus(c_) != CONNECTION_OK) throw Lost{msg};
      PQclear(PQexec(c_, "ROLLBACK"));
      throw IoError("buffer", strcat(describe(), ": '", sql, "': ", msg));
    }
    std::string out = count                                       ? std::string(PQcmdTuples(r))
                      : PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? std::string(PQgetvalue(r, 0, 0))
                                                                  : std::string();
    PQclear(r);
    return out;
  }
  std::string q(const std::string& sql) { return pg(sql); }
  void x(const std::string& sql) { pg(sql); }
  std::string url_, t_, exp_;
  PGconn* c_ = nullptr;
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
