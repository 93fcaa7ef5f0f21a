// ServeStore over PostgreSQL (see serve_store.h): the sqlite store's tables and row life cycle
// (recorded -> ready -> committed) as "<table>_calls" and "<table>_meta", token arrays as bytea of
// native little-endian values, each call one transaction through buffer::PgSession (reconnects).
#include <cstring>
#include <map>
#include <mutex>

#include "buffer/pg_session.h"
#include "buffer/storage.h"
#include "core/error.h"
#include "explorer/serve_store.h"

namespace trinity::explorer {

namespace {

using enum detail::CallState;

using Param = buffer::PgSession::Param;

template <class T>
Param blob(const std::vector<T>& v) {
  return Param{std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)), true, false};
}

template <class T>
std::vector<T> unblob(const std::optional<std::string>& text) {
  if (!text) return {};
  const std::string b = buffer::PgSession::bytes(*text);
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

Param txt(const std::string& s) {
  return Param{s, false, false};
}
Param num(double x) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", x);
  return Param{b, false, false};
}
Param num(int64_t x) {
  return Param{std::to_string(x), false, false};
}

class PgServeStore final : public ServeStore {
 public:
  PgServeStore(const std::string& url, const std::string& table)
      : db_(url, "serve history in PostgreSQL"),
        name_(buffer::sql_table_name(table, true)),
        calls_(strcat("\"", name_, "_calls\"")),
        meta_(strcat("\"", name_, "_meta\"")) {
    db_.tx([&] {
      db_.exec("SELECT pg_advisory_xact_lock(7177002)");  // racing creators agree
      db_.exec("CREATE TABLE IF NOT EXISTS " + calls_ +
               " (msg_id TEXT NOT NULL, choice BIGINT NOT NULL, created DOUBLE PRECISION NOT NULL, "
               "version BIGINT NOT NULL, finish TEXT NOT NULL, prompt BYTEA, ids BYTEA, logprobs BYTEA, "
               "state INTEGER NOT NULL DEFAULT 0, reward DOUBLE PRECISION, task_id TEXT, run_id BIGINT, "
               "PRIMARY KEY (msg_id, choice))");
      db_.exec(strcat("CREATE INDEX IF NOT EXISTS \"", name_, "_calls_state\" ON ", calls_, " (state, created)"));
      db_.exec("CREATE TABLE IF NOT EXISTS " + meta_ + " (key TEXT PRIMARY KEY, value BIGINT NOT NULL)");
    });
  }

  void record(const tok::RecordedCall& c) override {
    std::lock_guard<std::mutex> l(mu_);
    db_.tx([&] {
      db_.exec("INSERT INTO " + calls_ +
                   " (msg_id, choice, created, version, finish, prompt, ids, logprobs, state) "
                   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0) ON CONFLICT (msg_id, choice) DO UPDATE SET "
                   "created = EXCLUDED.created, version = EXCLUDED.version, finish = EXCLUDED.finish, "
                   "prompt = EXCLUDED.prompt, ids = EXCLUDED.ids, logprobs = EXCLUDED.logprobs, state = 0",
               {txt(c.id), num(c.choice), num(c.start), num(c.model_version), txt(c.finish_reason), blob(c.prompt_ids),
                blob(c.ids), blob(c.logprobs)});
    });
  }

  Feedback feedback(const std::vector<std::string>& msg_ids, double reward, const std::string& task_id,
                    int64_t run_id) override {
    std::lock_guard<std::mutex> l(mu_);
    Feedback out;
    db_.tx([&] {
      out = Feedback{};  // a retried transaction starts over
      for (const auto& id : msg_ids) {
        const int64_t n = db_.exec("UPDATE " + calls_ +
                                       " SET state = 1, reward = $1, task_id = $2, run_id = $3 WHERE msg_id = $4 "
                                       "AND state < 2",
                                   {num(reward), txt(task_id), num(run_id), txt(id)})
                              .changed;
        if (n == 0) out.unknown.push_back(id);
        out.updated += n;
      }
    });
    return out;
  }

  std::vector<Group> ready() override {
    std::lock_guard<std::mutex> l(mu_);
    buffer::PgSession::Result r;
    db_.tx([&] {
      r = db_.exec(
          "SELECT msg_id, choice, created, version, finish, prompt, ids, logprobs, reward, task_id, run_id "
          "FROM " +
          calls_ + " WHERE state = 1 ORDER BY task_id, run_id, created, msg_id, choice");
    });
    std::vector<Group> out;
    std::map<std::pair<std::string, int64_t>, size_t> at;
    for (const auto& row : r.rows) {
      tok::RecordedCall c;
      c.id = row[0].value_or("");
      c.choice = std::stoll(row[1].value_or("0"));
      c.start = std::stod(row[2].value_or("0"));
      c.model_version = std::stoll(row[3].value_or("0"));
      c.finish_reason = row[4].value_or("");
      c.prompt_ids = unblob<int32_t>(row[5]);
      c.ids = unblob<int32_t>(row[6]);
      c.logprobs = unblob<float>(row[7]);
      c.endpoint = "serve";
      const auto key = std::make_pair(row[9].value_or(""), std::stoll(row[10].value_or("0")));
      auto it = at.find(key);
      if (it == at.end()) {
        it = at.emplace(key, out.size()).first;
        out.push_back(Group{key.first, key.second, 0.0, {}});
      }
      out[it->second].reward = std::stod(row[8].value_or("0"));
      out[it->second].calls.push_back(std::move(c));
    }
    return out;
  }

  void mark_committed(const std::vector<std::pair<std::string, int64_t>>& rows) override {
    std::lock_guard<std::mutex> l(mu_);
    db_.tx([&] {
      for (const auto& [id, choice] : rows)
        db_.exec("UPDATE " + calls_ +
                     " SET state = 2, prompt = NULL, ids = NULL, logprobs = NULL WHERE msg_id = $1 AND choice = $2",
                 {txt(id), num(choice)});
    });
  }

  int64_t drop_pending_older_than(double cutoff) override {
    std::lock_guard<std::mutex> l(mu_);
    int64_t n = 0;
    db_.tx([&] { n = db_.exec("DELETE FROM " + calls_ + " WHERE state = 0 AND created < $1", {num(cutoff)}).changed; });
    return n;
  }

  Counts counts() override {
    std::lock_guard<std::mutex> l(mu_);
    buffer::PgSession::Result r;
    db_.tx([&] { r = db_.exec("SELECT state, COUNT(*) FROM " + calls_ + " GROUP BY state"); });
    Counts c;
    for (const auto& row : r.rows) {
      const int64_t s = std::stoll(row[0].value_or("0")), n = std::stoll(row[1].value_or("0"));
      (s == kRecorded ? c.recorded : s == kReady ? c.ready : c.committed) += n;
    }
    return c;
  }

  int64_t get_meta(const std::string& key, int64_t def) override {
    std::lock_guard<std::mutex> l(mu_);
    std::string v;
    db_.tx([&] { v = db_.exec("SELECT value FROM " + meta_ + " WHERE key = $1", {txt(key)}).first(); });
    return v.empty() ? def : std::stoll(v);
  }

  void set_meta(const std::string& key, int64_t value) override {
    std::lock_guard<std::mutex> l(mu_);
    db_.tx([&] {
      db_.exec("INSERT INTO " + meta_ +
                   " (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = "
                   "EXCLUDED.value",
               {txt(key), num(value)});
    });
  }

  std::string describe() const override { return strcat("serve history ", calls_, " in PostgreSQL"); }

 private:
  std::mutex mu_;
  buffer::PgSession db_;
  std::string name_, calls_, meta_;
};

}  // namespace

std::unique_ptr<ServeStore> open_pg_serve_store(const std::string& url, const std::string& table) {
  return std::make_unique<PgServeStore>(url, table);
}

}  // namespace trinity::explorer
