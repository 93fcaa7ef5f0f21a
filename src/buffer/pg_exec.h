// libpq helpers shared by the PostgreSQL storage and PgSession (buffer .cpp files only: this header
// includes libpq-fe.h): a statement with (value, binary, null) parameters, and the class of a failed
// result: the connection is gone (reconnect and run the transaction again), a serialization failure
// or deadlock (run it again), or an error to report.
#pragma once

#include <libpq-fe.h>

#include <string>
#include <vector>

namespace trinity::buffer::detail {

// P has `value` (std::string), `binary` and `null` (bool). The result may be null (out of memory).
template <class P>
PGresult* exec_params(PGconn* c, const std::string& sql, const std::vector<P>& params) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (const auto& p : params) {
    values.push_back(p.null ? nullptr : p.value.data());
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  return PQexecParams(c, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(), lengths.data(),
                      formats.data(), 0);
}

enum class PgFailure { kLost, kRetry, kError };

// The class of a failed result `r` (may be null) on `c`; *message gets the server's words.
inline PgFailure classify(PGresult* r, PGconn* c, std::string* message) {
  const char* code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string state = code ? code : "";
  std::string msg = r ? PQresultErrorMessage(r) : PQerrorMessage(c);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  *message = msg;
  if (PQstatus(c) != CONNECTION_OK || state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0) return PgFailure::kLost;
  if (state == "40001" || state == "40P01") return PgFailure::kRetry;
  return PgFailure::kError;
}

}  // namespace trinity::buffer::detail
