// PgSession: one libpq connection for small transactional tables beside a PostgreSQL buffer (the
// explore-step leases, serve mode's call history): statements with text or binary (bytea)
// parameters, text results, and transactions retried whole after a reconnect (backoff up to 2 s,
// for 60 s) when the server restarts or the network drops. libpq stays out of this header.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trinity::buffer {

class PgSession {
 public:
  struct Param {
    std::string value;
    bool binary = false;  // sent as bytea
    bool null = false;
  };
  struct Result {
    std::vector<std::vector<std::optional<std::string>>> rows;  // text values; nullopt = NULL
    int64_t changed = 0;                                        // rows an INSERT/UPDATE/DELETE touched
    // The first column of the first row, or "" when there is none (or it is NULL).
    std::string first() const { return rows.empty() || !rows[0][0] ? std::string() : *rows[0][0]; }
  };

  // `url`: a postgresql:// URL (postgresql+psycopg2:// accepted); `where` names the user in errors.
  PgSession(const std::string& url, std::string where);
  ~PgSession();
  PgSession(const PgSession&) = delete;
  PgSession& operator=(const PgSession&) = delete;

  // One statement ($1, $2, ... placeholders). IoError naming `where` and the statement on an SQL error.
  Result exec(const std::string& sql, const std::vector<Param>& params = {});
  // fn between BEGIN and COMMIT; on a lost connection the whole transaction runs again after a
  // reconnect. IoError when the server stays unreachable for 60 s.
  void tx(const std::function<void()>& fn);
  const std::string& where() const { return where_; }

  // bytea in text form ("\x0a0b...") to bytes.
  static std::string bytes(const std::string& text);

 private:
  struct Lost {
    std::string msg;
  };
  struct Retry {};
  void connect();
  std::string url_, where_;
  void* conn_ = nullptr;  // PGconn*
};

}  // namespace trinity::buffer
