// PostgreSQL experience storage (see pg_storage.h). One connection per object, guarded by a mutex.
// Statements are parameterised (PQexecParams; the arrays blob goes as binary bytea), results are text.
#include "buffer/pg_storage.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>

#include "buffer/json_util.h"
#include "buffer/pg_exec.h"
#include "buffer/replay.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"

namespace trinity::buffer {

using detail::json;

namespace {

using enum detail::RowStatus;
constexpr int kPgSchemaVersion = 1;
constexpr double kReconnectSeconds = 60;  // how long a lost server is waited for (after the first connection)

struct PgLost {
  std::string message;
};
struct PgRetry {};

std::string num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", x);
  return b;
}
std::string num(int64_t x) {
  return std::to_string(x);
}

std::string id_array(const std::vector<int64_t>& ids) {
  std::string s = "{";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  s += '}';
  return s;
}

struct Param {
  std::string value;
  bool null = false, binary = false;
  Param(std::string v) : value(std::move(v)) {}  // NOLINT: implicit for brevity at call sites
  Param(const char* v) : value(v) {}             // NOLINT
  static Param null_value() {
    Param p("");
    p.null = true;
    return p;
  }
  static Param bytes(std::string v) {
    Param p(std::move(v));
    p.binary = true;
    return p;
  }
};

class Res {
 public:
  explicit Res(PGresult* r) : r_(r) {}
  ~Res() { PQclear(r_); }
  Res(Res&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Res(const Res&) = delete;
  Res& operator=(const Res&) = delete;
  int rows() const { return PQntuples(r_); }
  bool is_null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  std::string text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
  }
  int64_t i64(int row, int col) const { return std::strtoll(PQgetvalue(r_, row, col), nullptr, 10); }
  double f64(int row, int col) const { return std::strtod(PQgetvalue(r_, row, col), nullptr); }
  std::string bytes(int row, int col) const {
    size_t n = 0;
    unsigned char* p = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r_, row, col)), &n);
    if (!p) throw IoError("buffer", "postgresql: cannot decode a bytea value (out of memory)");
    std::string s(reinterpret_cast<const char*>(p), n);
    PQfreemem(p);
    return s;
  }
  int64_t affected() const { return std::strtoll(PQcmdTuples(r_), nullptr, 10); }

 private:
  PGresult* r_;
};

// The experience stored in row `i` of `r`: meta JSON, arrays bytea, reward (NULL = pending) and use
// count in columns c .. c+3.
Experience stored_experience(const Res& r, int i, int c, const std::string& where) {
  Experience e = experience_from_json(r.text(i, c), where);
  decode_arrays(r.bytes(i, c + 1), e, where);
  if (r.is_null(i, c + 2))
    e.reward.reset();
  else
    e.reward = r.f64(i, c + 2);
  e.use_count = r.i64(i, c + 3);
  return e;
}

// The URL without its password (for messages).
std::string hide_password(const std::string& url) {
  const auto scheme = url.find("://");
  const auto at = url.find('@');
  if (scheme == std::string::npos || at == std::string::npos || at < scheme) return url;
  const auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return strcat(url.substr(0, colon), ":***", url.substr(at));
}

}  // namespace

bool is_postgres_url(const std::string& url) {
  return url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0 ||
         (url.rfind("postgresql+", 0) == 0 && url.find("://") != std::string::npos);
}

std::string libpq_url(const std::string& url) {
  if (url.rfind("postgresql+", 0) == 0) return strcat("postgresql", url.substr(url.find("://")));
  return url;
}

struct PgStorage::Conn {
  PGconn* c = nullptr;
  std::mutex mu;
  std::string url, where;
  ~Conn() {
    if (c) PQfinish(c);
  }
  void connect() {
    if (c) PQfinish(c);
    c = PQconnectdb(url.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
      std::string msg = c ? PQerrorMessage(c) : "out of memory";
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
      throw PgLost{msg};
    }
    PQsetNoticeProcessor(
        c, [](void*, const char*) {}, nullptr);  // "relation already exists, skipping"
  }
  // Runs one statement. PgLost when the connection is gone, PgRetry on a serialization failure or a
  // deadlock (the transaction is run again), IoError naming the statement otherwise.
  Res exec(const std::string& sql, const std::vector<Param>& params = {}) {
    if (!c || PQstatus(c) != CONNECTION_OK) throw PgLost{"not connected"};
    PGresult* r = detail::exec_params(c, sql, params);
    const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Res(r);
    std::string msg;
    const detail::PgFailure f = detail::classify(r, c, &msg);
    PQclear(r);
    if (f == detail::PgFailure::kLost) throw PgLost{msg};
    if (f == detail::PgFailure::kRetry) throw PgRetry{};
    throw IoError("buffer", strcat(where, ": ", msg, " (in: ", sql.substr(0, 100), ")"));
  }
};

template <typename Fn>
auto PgStorage::transaction(Fn&& fn) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(patience_s_);
  auto backoff = std::chrono::milliseconds(50);
  for (int attempt = 1;; ++attempt) {
    try {
      if (!conn_->c || PQstatus(conn_->c) != CONNECTION_OK) conn_->connect();
      conn_->exec("BEGIN");
      if constexpr (std::is_void_v<decltype(fn())>) {
        fn();
        conn_->exec("COMMIT");
        return;
      } else {
        auto r = fn();
        conn_->exec("COMMIT");
        return r;
      }
    } catch (const PgLost& e) {
      if (std::chrono::steady_clock::now() > deadline)
        throw IoError("buffer", strcat(describe(), ": the database is unreachable (", patience_s_,
                                       " s of retries): ", e.message));
      if (attempt == 1 || attempt % 20 == 0)
        log::warn(describe(), ": database connection lost (", e.message, "); reconnecting");
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
      if (conn_->c) PQfinish(conn_->c), conn_->c = nullptr;
    } catch (const PgRetry&) {
      try {
        conn_->exec("ROLLBACK");
      } catch (...) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5 * attempt));
    } catch (...) {
      try {
        if (conn_->c && PQstatus(conn_->c) == CONNECTION_OK) conn_->exec("ROLLBACK");
      } catch (...) {
      }
      throw;
    }
  }
}

PgStorage::PgStorage(const StorageConfig& cfg)
    : cfg_(cfg),
      conn_(std::make_unique<Conn>()),
      rng_(static_cast<uint64_t>(cfg.data_selector.seed) ^ (static_cast<uint64_t>(::getpid()) << 20)) {
  if (!is_postgres_url(cfg_.path))
    throw ConfigError("buffer",
                      strcat("buffer '", cfg_.name, "': '", hide_password(cfg_.path), "' is not a postgresql:// URL"));
  url_ = libpq_url(cfg_.path);
  shown_url_ = hide_password(url_);
  table_ = sql_table_name(cfg_.name, true);
  owner_ = cfg_.reader_id.empty() ? cfg_.name : cfg_.reader_id;
  conn_->url = url_;
  conn_->where = describe();
  if (cfg_.replay_buffer.enable) check_priority_fn(cfg_.replay_buffer);
  // A wrong URL fails fast: the first connection gets max_retry_times tries, max_retry_interval apart.
  patience_s_ = std::max(0.5, static_cast<double>(cfg_.max_retry_times) * cfg_.max_retry_interval);
  const std::string t = strcat("\"", table_, "\""), p = strcat("\"", table_, "_payload\"");
  transaction([&] {
    // One creator at a time (CREATE TABLE IF NOT EXISTS races between processes otherwise).
    conn_->exec("SELECT pg_advisory_xact_lock(7301730173)");
    conn_->exec("CREATE TABLE IF NOT EXISTS trinity_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL)");
    const Res v = conn_->exec("SELECT version FROM trinity_schema WHERE name=$1", {table_});
    if (v.rows() > 0 && v.i64(0, 0) > kPgSchemaVersion)
      throw IoError("buffer", strcat(describe(), ": schema version ", v.i64(0, 0), " is newer than this trinity's (",
                                     kPgSchemaVersion, "); upgrade trinity"));
    conn_->exec(strcat("CREATE TABLE IF NOT EXISTS ", t,
                       " ("
                       "id BIGSERIAL PRIMARY KEY, timestamp DOUBLE PRECISION NOT NULL, "
                       "task_id TEXT NOT NULL, run_id BIGINT NOT NULL, msg_id TEXT NOT NULL, "
                       "uid TEXT NOT NULL UNIQUE, rid TEXT NOT NULL, model_version BIGINT NOT NULL, "
                       "reward DOUBLE PRECISION, status INTEGER NOT NULL, consumed BIGINT NOT NULL DEFAULT 0, "
                       "lease TEXT, owner TEXT, lease_expires DOUBLE PRECISION, "
                       "available_at DOUBLE PRECISION NOT NULL DEFAULT 0, schema_version INTEGER NOT NULL)"));
    conn_->exec(strcat("CREATE TABLE IF NOT EXISTS ", p,
                       " (id BIGINT PRIMARY KEY, meta TEXT NOT NULL, arrays BYTEA NOT NULL)"));
    conn_->exec(strcat("CREATE INDEX IF NOT EXISTS \"", table_, "_order\" ON ", t, " (status, consumed, id)"));
    conn_->exec(strcat("CREATE INDEX IF NOT EXISTS \"", table_, "_lease\" ON ", t, " (lease) WHERE lease IS NOT NULL"));
    conn_->exec(strcat("CREATE INDEX IF NOT EXISTS \"", table_, "_task\" ON ", t, " (task_id)"));
    conn_->exec("INSERT INTO trinity_schema (name, version) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                {table_, num(static_cast<int64_t>(kPgSchemaVersion))});
  });
  patience_s_ = kReconnectSeconds;  // from now on a lost server (a restart) is waited for
}

PgStorage::~PgStorage() = default;

std::string PgStorage::describe() const {
  return strcat("postgresql buffer '", shown_url_, "' table '", table_, "'");
}

bool PgStorage::write(const std::vector<Experience>& batch, double) {
  if (batch.empty()) return true;
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(batch.size());
  for (const auto& e : batch) enc.emplace_back(experience_to_json(e, false), encode_arrays(e));
  std::lock_guard<std::mutex> lock(conn_->mu);
  constexpr size_t kChunk = 500;  // rows per statement (11 parameters each; PostgreSQL allows 65535)
  const int64_t dup = transaction([&] {
    const double ts = wall_seconds();
    int64_t d = 0;
    for (size_t from = 0; from < batch.size(); from += kChunk) {
      const size_t to = std::min(batch.size(), from + kChunk);
      // One multi-row INSERT for the rows, one for their payloads: two round trips per chunk.
      std::string sql = strcat("INSERT INTO \"", table_,
                               "\" (timestamp, task_id, run_id, msg_id, uid, rid, "
                               "model_version, reward, status, consumed, schema_version) VALUES ");
      std::vector<Param> params;
      params.reserve((to - from) * 11);
      for (size_t i = from; i < to; ++i) {
        const Experience& e = batch[i];
        sql += i == from ? "(" : ",(";
        for (int k = 0; k < 11; ++k) sql += strcat(k ? ",$" : "$", params.size() + static_cast<size_t>(k) + 1);
        sql += ")";
        params.insert(params.end(), {num(ts), e.eid.tid(), num(e.eid.run), e.eid.suffix, e.eid.uid(), e.eid.rid(),
                                     num(e.model_version), e.reward ? Param(num(*e.reward)) : Param::null_value(),
                                     num(static_cast<int64_t>(e.reward ? kReady : kPending)), num(e.use_count),
                                     num(static_cast<int64_t>(kSchemaVersion))});
      }
      sql += " ON CONFLICT (uid) DO NOTHING RETURNING id, uid";
      const Res r = conn_->exec(sql, params);
      std::map<std::string, std::string> id_of;  // uid -> new row id (rows of stored uids are not returned)
      for (int i = 0; i < r.rows(); ++i) id_of[r.text(i, 1)] = r.text(i, 0);
      d += static_cast<int64_t>(to - from) - r.rows();
      if (r.rows() == 0) continue;
      std::string psql = strcat("INSERT INTO \"", table_, "_payload\" (id, meta, arrays) VALUES ");
      std::vector<Param> pp;
      for (size_t i = from; i < to; ++i) {
        const auto it = id_of.find(batch[i].eid.uid());
        if (it == id_of.end()) continue;
        psql += strcat(pp.empty() ? "" : ",", "($", pp.size() + 1, ",$", pp.size() + 2, ",$", pp.size() + 3, ")");
        pp.insert(pp.end(), {it->second, enc[i].first, Param::bytes(enc[i].second)});
        id_of.erase(it);  // a uid repeated inside the batch is stored once
      }
      conn_->exec(psql, pp);
    }
    return d;
  });
  if (dup) log::warn(describe(), ": ", dup, " experience(s) with an already stored uid were ignored");
  return true;
}

bool PgStorage::try_lease_locked(const ReadRequest& req, bool partial, ReadResult& out) {
  const std::string t = strcat("\"", table_, "\"");
  return transaction([&]() -> bool {
    const double now = wall_seconds();
    // Leases whose reader died (or is too slow) go back to ready.
    conn_->exec(strcat("UPDATE ", t,
                       " SET status=1, lease=NULL, owner=NULL, lease_expires=NULL, "
                       "consumed=GREATEST(consumed-1,0) WHERE status=2 AND lease_expires < $1"),
                {num(now)});
    std::vector<Param> params = {num(now)};
    std::string filter = "status=1 AND available_at <= $1";
    if (req.min_model_version) {
      params.emplace_back(num(*req.min_model_version));
      filter += strcat(" AND model_version >= $", params.size());
    }
    std::vector<int64_t> ids;
    const auto& rb = cfg_.replay_buffer;
    if (!rb.enable) {
      params.emplace_back(num(static_cast<int64_t>(req.batch_size)));
      const Res r =
          conn_->exec(strcat("SELECT id FROM ", t, " WHERE ", filter, " ORDER BY consumed ASC, id ASC LIMIT $",
                             params.size(), " FOR UPDATE SKIP LOCKED"),
                      params);
      for (int i = 0; i < r.rows(); ++i) ids.push_back(r.i64(i, 0));
    } else if (rb.priority_fn == "linear_decay" || rb.sigma <= 0) {
      const bool limited = rb.priority_fn == "decay_limit_randomization" && rb.use_count_limit > 0;
      if (limited) {
        params.emplace_back(num(rb.use_count_limit));
        filter += strcat(" AND consumed < $", params.size());
      }
      params.emplace_back(num(rb.decay));
      const size_t decay = params.size();
      params.emplace_back(num(static_cast<int64_t>(req.batch_size)));
      const Res r = conn_->exec(strcat("SELECT id FROM ", t, " WHERE ", filter, " ORDER BY (model_version - $", decay,
                                       " * consumed) DESC, id DESC LIMIT $", params.size(), " FOR UPDATE SKIP LOCKED"),
                                params);
      for (int i = 0; i < r.rows(); ++i) ids.push_back(r.i64(i, 0));
    } else {
      struct Cand {
        double prio;
        int64_t id;
      };
      std::vector<Cand> cands;
      std::vector<int64_t> retire;
      const Res r = conn_->exec(
          strcat("SELECT id, model_version, consumed FROM ", t, " WHERE ", filter, " FOR UPDATE SKIP LOCKED"), params);
      for (int i = 0; i < r.rows(); ++i) {
        const Priority pr = replay_priority(rb, r.i64(i, 1), r.i64(i, 2), rng_);
        if (pr.keep)
          cands.push_back({pr.value, r.i64(i, 0)});
        else
          retire.push_back(r.i64(i, 0));
      }
      if (!retire.empty())
        conn_->exec(strcat("UPDATE ", t, " SET status=3 WHERE id = ANY($1::bigint[])"), {id_array(retire)});
      std::sort(cands.begin(), cands.end(),
                [](const Cand& a, const Cand& b) { return a.prio != b.prio ? a.prio > b.prio : a.id > b.id; });
      for (size_t i = 0; i < cands.size() && i < req.batch_size; ++i) ids.push_back(cands[i].id);
    }
    if (ids.empty() || (ids.size() < req.batch_size && !partial)) return false;
    const std::string lease = strcat("L", ::getpid(), "-", random_suffix(), random_suffix());
    conn_->exec(strcat("UPDATE ", t,
                       " SET status=2, lease=$1, owner=$2, lease_expires=$3, consumed=consumed+1 "
                       "WHERE id = ANY($4::bigint[])"),
                {lease, owner_, num(now + cfg_.lease_timeout), id_array(ids)});
    const Res g =
        conn_->exec(strcat("SELECT m.id, p.meta, p.arrays, m.reward, m.consumed, m.schema_version FROM ", t,
                           " m JOIN \"", table_, "_payload\" p ON p.id = m.id WHERE m.id = ANY($1::bigint[])"),
                    {id_array(ids)});
    std::map<int64_t, int> row_of;
    for (int i = 0; i < g.rows(); ++i) row_of[g.i64(i, 0)] = i;
    out.batch.clear();
    for (int64_t id : ids) {  // in the order chosen
      const auto it = row_of.find(id);
      if (it == row_of.end()) throw IoError("buffer", strcat(describe(), ": row ", id, " vanished"));
      const int i = it->second;
      const std::string where = strcat(describe(), " row ", id);
      if (g.i64(i, 5) > kSchemaVersion)
        throw ValueError("buffer", strcat(where, ": schema_version ", g.i64(i, 5), " is newer than this build (",
                                          kSchemaVersion, ")"));
      out.batch.push_back(stored_experience(g, i, 1, where));
    }
    out.lease = lease;
    return true;
  });
}

ReadResult PgStorage::read(const ReadRequest& req) {
  return poll_read(req, [&](bool partial, ReadResult& r) {
    std::lock_guard<std::mutex> lock(conn_->mu);
    if (!try_lease_locked(req, partial, r)) return false;
    my_leases_.insert(r.lease);
    return true;
  });
}

bool PgStorage::ack_in_transaction(const std::string& lease) {
  const auto& rb = cfg_.replay_buffer;
  const bool reuse = rb.enable && rb.reuse_cooldown_time.has_value();
  const int64_t limit = rb.priority_fn == "decay_limit_randomization" ? rb.use_count_limit : 0;
  const Res r = conn_->exec(
      strcat("UPDATE \"", table_,
             "\" SET status=CASE WHEN $1::boolean AND ($2::bigint <= 0 OR "
             "consumed < $2::bigint) THEN 1 ELSE 3 END, available_at=$3, lease=NULL, owner=NULL, "
             "lease_expires=NULL WHERE lease=$4 AND status=2"),
      {reuse ? "true" : "false", num(limit), num(reuse ? wall_seconds() + *rb.reuse_cooldown_time : 0.0), lease});
  return r.affected() > 0;
}

bool PgStorage::ack(const std::string& lease) {
  std::lock_guard<std::mutex> lock(conn_->mu);
  const bool held = transaction([&] { return ack_in_transaction(lease); });
  my_leases_.erase(lease);
  return held;
}

bool PgStorage::renew(const std::string& lease) {
  std::lock_guard<std::mutex> lock(conn_->mu);
  return transaction([&] {
    return conn_
               ->exec(strcat("UPDATE \"", table_, "\" SET lease_expires=$1 WHERE lease=$2 AND status=2"),
                      {num(wall_seconds() + cfg_.lease_timeout), lease})
               .affected() > 0;
  });
}

void PgStorage::release(const std::string& lease) {
  std::lock_guard<std::mutex> lock(conn_->mu);
  transaction([&] {
    conn_->exec(strcat("UPDATE \"", table_,
                       "\" SET status=1, lease=NULL, owner=NULL, lease_expires=NULL, "
                       "consumed=GREATEST(consumed-1,0) WHERE lease=$1 AND status=2"),
                {lease});
  });
  my_leases_.erase(lease);
}

size_t PgStorage::set_reward(const std::vector<std::string>& uids, double reward) {
  std::lock_guard<std::mutex> lock(conn_->mu);
  return transaction([&] {
    size_t n = 0;
    for (const auto& uid : uids)
      n += static_cast<size_t>(
          conn_
              ->exec(strcat("UPDATE \"", table_, "\" SET reward=$1, status=1 WHERE uid=$2 AND status=0"),
                     {num(reward), uid})
              .affected());
    return n;
  });
}

size_t PgStorage::set_group_reward(const std::string& group_id, double reward) {
  std::lock_guard<std::mutex> lock(conn_->mu);
  return transaction([&] {
    return static_cast<size_t>(conn_
                                   ->exec(strcat("UPDATE \"", table_,
                                                 "\" SET reward=$1, status=1 WHERE status=0 AND "
                                                 "(task_id=$2 OR rid=$2)"),
                                          {num(reward), group_id})
                                   .affected());
  });
}

StorageStats PgStorage::stats() {
  std::lock_guard<std::mutex> lock(conn_->mu);
  const std::string t = strcat("\"", table_, "\"");
  return transaction([&] {
    StorageStats s;
    const Res r = conn_->exec(strcat("SELECT CASE WHEN status=2 AND lease_expires < $1 THEN 1 ELSE status END AS s, "
                                     "count(*) FROM ",
                                     t, " GROUP BY 1"),
                              {num(wall_seconds())});
    for (int i = 0; i < r.rows(); ++i) {
      const int64_t n = r.i64(i, 1);
      s.total += n;
      switch (r.i64(i, 0)) {
        case kPending:
          s.pending += n;
          break;
        case kReady:
          s.ready += n;
          break;
        case kLeased:
          s.leased += n;
          break;
        default:
          s.consumed += n;
          break;
      }
    }
    const Res mv = conn_->exec(strcat("SELECT model_version, count(*) FROM ", t, " GROUP BY model_version"));
    for (int i = 0; i < mv.rows(); ++i) s.by_model_version[mv.i64(i, 0)] = mv.i64(i, 1);
    const Res rw = conn_->exec(strcat("SELECT reward FROM ", t, " WHERE reward IS NOT NULL ORDER BY id"));
    for (int i = 0; i < rw.rows(); ++i) s.rewards.push_back(rw.f64(i, 0));
    return s;
  });
}

std::vector<Experience> PgStorage::scan(int64_t offset, int64_t limit) {
  std::lock_guard<std::mutex> lock(conn_->mu);
  return transaction([&] {
    const Res r =
        conn_->exec(strcat("SELECT m.id, p.meta, p.arrays, m.reward, m.consumed FROM \"", table_, "\" m JOIN \"",
                           table_, "_payload\" p ON p.id = m.id ORDER BY m.id LIMIT $1 OFFSET $2"),
                    {num(limit), num(offset)});
    std::vector<Experience> out;
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back(stored_experience(r, i, 1, strcat(describe(), " row ", r.i64(i, 0))));
    }
    return out;
  });
}

std::string PgStorage::state() {
  std::lock_guard<std::mutex> lock(conn_->mu);
  json j = {{"kind", "postgresql"}, {"owner", owner_}, {"leases", json::array()}};
  for (const auto& l : my_leases_) j["leases"].push_back(l);
  return j.dump();
}

void PgStorage::load_state(const std::string& state) {
  const json j = detail::parse_json(state, describe() + " state");
  if (!j.is_object() || j.value("kind", "") != "postgresql" || !j.contains("leases"))
    throw ValueError("buffer", strcat(describe(), ": state is not a postgresql reader state: ", state));
  std::vector<std::string> covered;
  for (const auto& l : j.at("leases")) covered.push_back(l.get<std::string>());
  const std::string owner = j.value("owner", owner_);
  std::lock_guard<std::mutex> lock(conn_->mu);
  transaction([&] {
    for (const auto& l : covered) ack_in_transaction(l);
    conn_->exec(strcat("UPDATE \"", table_,
                       "\" SET status=1, lease=NULL, owner=NULL, lease_expires=NULL, "
                       "consumed=GREATEST(consumed-1,0) WHERE status=2 AND owner=$1"),
                {owner});
  });
  my_leases_.clear();
}

}  // namespace trinity::buffer
