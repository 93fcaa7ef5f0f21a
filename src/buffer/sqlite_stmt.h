// Internal to the buffer layer's sqlite files (sqlite_storage.cpp, preference_queue.cpp): a prepared
// statement that finalizes itself, binds by index and reads columns; exec of plain SQL; and a write
// transaction (BEGIN IMMEDIATE) retried while another process holds the lock. Errors name the
// component and the place. BUSY/LOCKED (after the connection's busy_timeout) throw SqliteBusy so the
// transaction can be retried. read_experience decodes a stored experience row.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>

#include "buffer/experience.h"
#include "core/error.h"

namespace trinity::buffer::detail {

struct SqliteBusy {};

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql, std::string where, const char* component = "buffer")
      : db_(db), where_(std::move(where)), component_(component) {
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) throw SqliteBusy{};
    if (rc != SQLITE_OK)
      throw IoError(component_, strcat(where_, ": cannot prepare '", sql, "': ", sqlite3_errmsg(db)));
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(st_, i, v);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(st_, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind_blob(int i, const std::string& v) {
    sqlite3_bind_blob(st_, i, v.data(), static_cast<int>(v.size()),
                      SQLITE_STATIC);  // callers keep v alive until step()
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(st_, i);
    return *this;
  }
  // true = a row is available, false = done. `where` overrides the statement's place in the message.
  bool step(const std::string& where = "") {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) throw SqliteBusy{};
    throw IoError(component_, strcat(where.empty() ? where_ : where, ": ", sqlite3_errmsg(db_)));
  }
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }
  double f64(int c) const { return sqlite3_column_double(st_, c); }
  bool is_null(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  std::string text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(st_, c))) : std::string();
  }
  std::string_view blob(int c) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(st_, c));
    return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(st_, c))) : std::string_view();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  std::string where_;
  const char* component_;
};

// The experience stored in columns c .. c+3 of the current row: meta JSON, arrays blob, reward (NULL =
// pending), use count. `where` names the row in errors.
inline Experience read_experience(const Stmt& st, int c, const std::string& where) {
  Experience e = experience_from_json(st.text(c), where);
  decode_arrays(st.blob(c + 1), e, where);
  if (st.is_null(c + 2))
    e.reward.reset();
  else
    e.reward = st.f64(c + 2);
  e.use_count = st.i64(c + 3);
  return e;
}

// sqlite3_exec of `sql`; SqliteBusy on BUSY/LOCKED, IoError naming `where` and the statement otherwise.
inline void sqlite_exec(sqlite3* db, const std::string& sql, const std::string& where,
                        const char* component = "buffer") {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    sqlite3_free(err);
    throw SqliteBusy{};
  }
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw IoError(component, strcat(where, ": ", msg, " (in: ", sql.substr(0, 80), ")"));
  }
}

// Runs fn() inside BEGIN IMMEDIATE ... COMMIT (ROLLBACK when it throws) and returns its result. A
// SqliteBusy anywhere in it retries the whole transaction up to `tries` attempts, `retry_s` apart
// (on_retry(attempt) is called before each wait); then IoError naming `where`.
template <typename Fn>
auto write_transaction(sqlite3* db, const std::string& where, const char* component, int tries, double retry_s, Fn&& fn,
                       const std::function<void(int)>& on_retry = {}) {
  for (int attempt = 1;; ++attempt) {
    try {
      sqlite_exec(db, "BEGIN IMMEDIATE", where, component);
      try {
        if constexpr (std::is_void_v<decltype(fn())>) {
          fn();
          sqlite_exec(db, "COMMIT", where, component);
          return;
        } else {
          auto r = fn();
          sqlite_exec(db, "COMMIT", where, component);
          return r;
        }
      } catch (...) {
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
      }
    } catch (const SqliteBusy&) {
      if (attempt >= tries)
        throw IoError(component, strcat(where, ": database stayed locked after ", tries,
                                        " attempts (another process holds the write lock)"));
      if (on_retry) on_retry(attempt);
      std::this_thread::sleep_for(std::chrono::duration<double>(retry_s));
    }
  }
}

}  // namespace trinity::buffer::detail
