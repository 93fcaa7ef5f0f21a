// PostgreSQL experience storage (storage_type: sql with path postgresql://user:pass@host:port/db; also
// postgresql+psycopg2:// and postgres://, Trinity's SQLAlchemy-style URLs), through libpq, for buffers
// shared by processes on several machines. Same tables, row life cycle and read order as the sqlite
// storage (sqlite_storage.h): pending -> ready -> leased -> done, leases with expiry and renew, replay
// priorities and cooldown, min_model_version, exactly-once reads. A read leases rows with
// SELECT ... FOR UPDATE SKIP LOCKED, so concurrent readers (threads or processes) never get the same row
// and never wait on each other. Tables are created on first use under an advisory lock and versioned
// in trinity_schema. A lost connection (server restart, network) is reopened with backoff for up to 60 s
// (the first connection: max_retry_times x max_retry_interval, so a wrong URL fails fast) and the
// interrupted transaction is run again; every statement is idempotent under such a retry (uid UNIQUE,
// lease-keyed updates), so nothing is lost or written twice.
#pragma once

#include <memory>
#include <set>

#include "buffer/storage.h"
#include "core/rng.h"

namespace trinity::buffer {

// True for postgresql://, postgresql+<driver>://, postgres:// URLs.
bool is_postgres_url(const std::string& url);
// The URL libpq takes (the +driver part dropped).
std::string libpq_url(const std::string& url);

class PgStorage : public ExperienceStorage {
 public:
  explicit PgStorage(const StorageConfig& cfg);
  ~PgStorage() override;

  bool write(const std::vector<Experience>& batch, double timeout_s = 1800.0) override;
  ReadResult read(const ReadRequest& req) override;
  bool ack(const std::string& lease) override;
  bool renew(const std::string& lease) override;
  void release(const std::string& lease) override;
  size_t set_reward(const std::vector<std::string>& uids, double reward) override;
  size_t set_group_reward(const std::string& group_id, double reward) override;
  void close() override {}
  StorageStats stats() override;
  std::vector<Experience> scan(int64_t offset, int64_t limit) override;
  std::string state() override;
  void load_state(const std::string& state) override;
  std::string describe() const override;

 private:
  struct Conn;
  template <typename Fn>
  auto transaction(Fn&& fn);
  bool try_lease_locked(const ReadRequest& req, bool partial, ReadResult& out);
  bool ack_in_transaction(const std::string& lease);

  StorageConfig cfg_;
  std::string url_, shown_url_, table_, owner_;
  std::unique_ptr<Conn> conn_;
  std::set<std::string> my_leases_;
  Rng rng_;
  double patience_s_ = 0;  // how long a transaction retries a lost connection
};

}  // namespace trinity::buffer
