// Storage factory and URL parsing (see storage.h).
#include "buffer/storage.h"

#include <cctype>

#include <chrono>
#include <thread>

#include "buffer/file_storage.h"
#include "buffer/pg_storage.h"
#include "buffer/queue_storage.h"
#include "buffer/sqlite_storage.h"
#include "core/error.h"

namespace trinity::buffer {

namespace {
bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}
bool is_sqlite_path(const std::string& p) {
  return p.rfind("sqlite:", 0) == 0 || ends_with(p, ".db") || ends_with(p, ".sqlite") || ends_with(p, ".sqlite3");
}
}  // namespace

bool is_database_path(const std::string& p) {
  return is_sqlite_path(p) || p.rfind("postgresql", 0) == 0 || p.rfind("postgres://", 0) == 0 ||
         p.rfind("mysql", 0) == 0;
}

std::string sqlite_path_from_url(const std::string& url) {
  if (url.rfind("sqlite:///", 0) == 0) return url.substr(10);
  if (url.rfind("sqlite://", 0) == 0)
    throw ConfigError("buffer", strcat("sqlite URL '", url, "': expected sqlite:///relative.db or sqlite:////abs/path.db"));
  if (url.find("://") != std::string::npos)
    throw UnsupportedError("buffer", strcat("database URL '", url, "': expected sqlite:///x.db or postgresql://"));
  return url;
}

ReadResult poll_read(const ReadRequest& req, const std::function<bool(bool, ReadResult&)>& try_once) {
  TRINITY_ASSERT(req.batch_size > 0, "batch_size must be > 0");
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(req.timeout_s));
  auto sleep = std::chrono::milliseconds(2);
  ReadResult r;
  for (;;) {
    const bool last = Clock::now() >= deadline;
    if (try_once(last && req.allow_partial, r)) {
      r.status = r.batch.size() == req.batch_size ? ReadStatus::kOk : ReadStatus::kTimeout;
      return r;
    }
    if (last) {
      r.status = ReadStatus::kTimeout;
      return r;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(sleep, deadline - Clock::now()));
    sleep = std::min(sleep * 2, std::chrono::milliseconds(100));
  }
}

std::unique_ptr<ExperienceStorage> open_storage(const StorageConfig& cfg) {
  const std::string& t = cfg.storage_type;
  if (t == "queue") return std::make_unique<QueueStorage>(cfg);
  if ((t == "sql" || t == "sqlite") && is_postgres_url(cfg.path)) return std::make_unique<PgStorage>(cfg);
  if (t == "sql" || t == "sqlite") return std::make_unique<SqliteStorage>(cfg);
  if (t == "file") {
    if (is_sqlite_path(cfg.path))
      throw ConfigError("buffer", strcat("buffer '", cfg.name, "': storage_type file with a database path '", cfg.path,
                                         "'; use storage_type: sql"));
    return std::make_unique<FileStorage>(cfg);
  }
  throw ConfigError("buffer", strcat("buffer '", cfg.name, "': storage_type '", t,
                                     "' is unknown; expected queue, sql (sqlite) or file"));
}

std::unique_ptr<ExperienceStorage> open_storage_url(const std::string& url) {
  StorageConfig cfg;
  std::string path = url, table;
  // Optional "#table" selects a buffer name inside a database file.
  if (auto h = url.find('#'); h != std::string::npos) path = url.substr(0, h), table = url.substr(h + 1);
  cfg.path = path;
  if (!table.empty()) cfg.name = table;
  if (is_sqlite_path(path) || is_postgres_url(path)) {
    cfg.storage_type = "sql";
  } else if (ends_with(path, ".jsonl") || ends_with(path, ".json")) {
    cfg.storage_type = "file";
  } else if (ends_with(path, ".parquet")) {
    throw UnsupportedError(
        "buffer", strcat("'", path, "': parquet experience buffers are not supported (tasksets and SFT/DPO datasets ",
                         "do read parquet); use a .jsonl file or sqlite"));
  } else {
    throw ConfigError("buffer", strcat("buffer path '", url, "': cannot tell the storage from the name; expected ",
                                       "sqlite:///x.db, x.db, x.sqlite or x.jsonl (append #table for a buffer name)"));
  }
  return open_storage(cfg);
}

std::string sql_table_name(const std::string& name, bool lowercase) {
  std::string t;
  for (char c : name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    t += keep ? (lowercase ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c) : '_';
  }
  if (t.empty()) t = "experience_buffer";
  return t;
}

}  // namespace trinity::buffer
