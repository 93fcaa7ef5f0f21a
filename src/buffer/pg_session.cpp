// PgSession (see pg_session.h).
#include "buffer/pg_session.h"

#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "buffer/pg_exec.h"
#include "buffer/pg_storage.h"
#include "core/error.h"
#include "core/log.h"

namespace trinity::buffer {

namespace {

PGconn* pg(void* c) {
  return static_cast<PGconn*>(c);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

PgSession::PgSession(const std::string& url, std::string where) : url_(libpq_url(url)), where_(std::move(where)) {}

PgSession::~PgSession() {
  if (conn_) PQfinish(pg(conn_));
}

void PgSession::connect() {
  if (conn_) PQfinish(pg(conn_));
  conn_ = PQconnectdb(url_.c_str());
  if (PQstatus(pg(conn_)) != CONNECTION_OK) throw Lost{trimmed(PQerrorMessage(pg(conn_)))};
  PQsetNoticeProcessor(
      pg(conn_), [](void*, const char*) {}, nullptr);  // "already exists, skipping"
}

PgSession::Result PgSession::exec(const std::string& sql, const std::vector<Param>& params) {
  if (!conn_ || PQstatus(pg(conn_)) != CONNECTION_OK) throw Lost{"not connected"};
  PGresult* r = detail::exec_params(pg(conn_), sql, params);
  const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    std::string msg;
    const detail::PgFailure f = detail::classify(r, pg(conn_), &msg);
    PQclear(r);
    if (f == detail::PgFailure::kLost) throw Lost{msg};
    if (f == detail::PgFailure::kRetry) throw Retry{};
    throw IoError("buffer", strcat(where_, ": '", sql.substr(0, 120), "': ", msg));
  }
  Result out;
  const int n = PQntuples(r), m = PQnfields(r);
  for (int i = 0; i < n; ++i) {
    std::vector<std::optional<std::string>> row;
    for (int j = 0; j < m; ++j)
      row.push_back(PQgetisnull(r, i, j) ? std::nullopt
                                         : std::optional<std::string>(std::string(
                                               PQgetvalue(r, i, j), static_cast<size_t>(PQgetlength(r, i, j)))));
    out.rows.push_back(std::move(row));
  }
  const char* changed = PQcmdTuples(r);
  out.changed = changed && *changed ? std::stoll(changed) : 0;
  PQclear(r);
  return out;
}

void PgSession::tx(const std::function<void()>& fn) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int attempt = 1;; ++attempt) {
    try {
      if (!conn_ || PQstatus(pg(conn_)) != CONNECTION_OK) connect();
      exec("BEGIN");
      try {
        fn();
        exec("COMMIT");
        return;
      } catch (const IoError&) {
        if (PQstatus(pg(conn_)) == CONNECTION_OK) PQclear(PQexec(pg(conn_), "ROLLBACK"));
        throw;
      }
    } catch (const Retry&) {  // serialization failure or deadlock: run it again
      if (PQstatus(pg(conn_)) == CONNECTION_OK) PQclear(PQexec(pg(conn_), "ROLLBACK"));
      if (std::chrono::steady_clock::now() > end)
        throw IoError("buffer", strcat(where_, ": transaction kept conflicting"));
    } catch (const Lost& e) {
      if (std::chrono::steady_clock::now() > end)
        throw IoError("buffer", strcat(where_, ": the database is unreachable (60 s of retries): ", e.msg));
      if (attempt == 1 || attempt % 20 == 0)
        log::warn(where_, ": database connection lost (", e.msg, "); reconnecting");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(2000, 50 << std::min(attempt, 6))));
    }
  }
}

std::string PgSession::bytes(const std::string& text) {
  size_t n = 0;
  unsigned char* b = PQunescapeBytea(reinterpret_cast<const unsigned char*>(text.c_str()), &n);
  if (!b) throw IoError("buffer", "malformed bytea value");
  std::string out(reinterpret_cast<const char*>(b), n);
  PQfreemem(b);
  return out;
}

}  // namespace trinity::buffer
