// Read-only buffer browsing (browse.h).
#include "buffer/browse.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "buffer/sqlite_stmt.h"
#include "buffer/sqlite_storage.h"
#include "core/error.h"

namespace trinity::buffer {

namespace {

using detail::Stmt;
using json = nlohmann::json;

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool matches(const BrowseFilter& f, std::optional<double> reward, int64_t version, const std::string& batch,
             int64_t task) {
  if ((f.min_reward || f.max_reward) && !reward) return false;
  if (f.min_reward && *reward < *f.min_reward) return false;
  if (f.max_reward && *reward > *f.max_reward) return false;
  if (f.model_version && version != *f.model_version) return false;
  if (!f.step.empty() && batch != f.step) return false;
  if (!f.task.empty()) {
    if (all_digits(f.task)) {
      if (std::to_string(task) != f.task) return false;
    } else if (batch + "/" + std::to_string(task) != f.task) {
      return false;
    }
  }
  return true;
}

// ---- sqlite ----

class SqliteBrowser : public BufferBrowser {
 public:
  SqliteBrowser(const std::string& path, const std::string& table) : path_(path), table_(table) {
    const auto names = sqlite_buffer_names(path);
    if (std::find(names.begin(), names.end(), table) == names.end())
      throw IoError("buffer", strcat("sqlite file '", path, "' has no buffer named '", table, "'"));
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close_v2(db_);
      throw IoError("buffer", strcat("cannot open sqlite file '", path, "': ", msg));
    }
    sqlite3_busy_timeout(db_, 10000);
    where_ = strcat("sqlite buffer '", path, "' table '", table, "'");
  }
  ~SqliteBrowser() override { sqlite3_close_v2(db_); }

  BrowsePage page(const BrowseFilter& f, BrowseOrder order, int64_t offset, int64_t limit) override {
    std::lock_guard<std::mutex> l(mu_);
    BrowsePage out;
    std::vector<Bind> binds;
    const std::string cond = where_sql(f, binds);
    {
      Stmt st(db_, strcat("SELECT COUNT(*) FROM \"", table_, "\" m", cond), where_);
      bind_all(st, binds, 1);
      if (st.step(where_)) out.total = st.i64(0);
    }
    const char* ord = order == BrowseOrder::kRewardDesc  ? " ORDER BY m.reward DESC NULLS LAST, m.id"
                      : order == BrowseOrder::kRewardAsc ? " ORDER BY m.reward ASC NULLS LAST, m.id"
                                                         : " ORDER BY m.id";
    Stmt st(db_, strcat(select_sql(), cond, ord, " LIMIT ? OFFSET ?"), where_);
    const int n = bind_all(st, binds, 1);
    st.bind(n, limit).bind(n + 1, offset);
    while (st.step(where_)) out.rows.emplace_back(st.i64(0), row(st));
    return out;
  }

  std::optional<Experience> get(int64_t id) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, strcat(select_sql(), " WHERE m.id = ?"), where_);
    st.bind(1, id);
    if (!st.step(where_)) return std::nullopt;
    return row(st);
  }

  std::vector<StepSummary> steps() override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string b = "substr(task_id, 1, instr(task_id, '/') - 1)";
    std::map<std::string, StepSummary> by;
    std::vector<std::string> order;
    {
      Stmt st(db_,
              strcat("SELECT ", b, " AS b, COUNT(*), COUNT(reward), AVG(reward) FROM \"", table_,
                     "\" GROUP BY b ORDER BY CAST(b AS INTEGER), b"),
              where_);
      while (st.step(where_)) {
        StepSummary s;
        s.step = st.text(0), s.count = st.i64(1), s.rewarded = st.i64(2), s.mean = st.is_null(3) ? 0 : st.f64(3);
        order.push_back(s.step);
        by[s.step] = s;
      }
    }
    // SQLite's bare columns: with MAX() / MIN() the other columns come from the row that has it.
    for (const bool best : {true, false}) {
      Stmt st(db_,
              strcat("SELECT ", b, " AS b, id, ", best ? "MAX" : "MIN", "(reward) FROM \"", table_,
                     "\" WHERE reward IS NOT NULL GROUP BY b"),
              where_);
      while (st.step(where_)) {
        auto it = by.find(st.text(0));
        if (it == by.end()) continue;
        (best ? it->second.best_id : it->second.worst_id) = st.i64(1);
        (best ? it->second.best : it->second.worst) = st.f64(2);
      }
    }
    std::vector<StepSummary> out;
    for (const auto& k : order) out.push_back(by[k]);
    return out;
  }

  int64_t count() override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, strcat("SELECT COUNT(*) FROM \"", table_, "\""), where_);
    return st.step(where_) ? st.i64(0) : 0;
  }

 private:
  struct Bind {
    bool is_text = false, is_real = false;
    std::string text;
    double real = 0;
    int64_t integer = 0;
  };
  std::string select_sql() const {
    return strcat("SELECT m.id, p.meta, p.arrays, m.reward, m.consumed FROM \"", table_, "\" m JOIN \"", table_,
                  "_payload\" p ON p.id = m.id");
  }
  static std::string where_sql(const BrowseFilter& f, std::vector<Bind>& b) {
    std::vector<std::string> parts;
    if (f.min_reward) parts.push_back("m.reward >= ?"), b.push_back({false, true, "", *f.min_reward, 0});
    if (f.max_reward) parts.push_back("m.reward <= ?"), b.push_back({false, true, "", *f.max_reward, 0});
    if (f.model_version) parts.push_back("m.model_version = ?"), b.push_back({false, false, "", 0, *f.model_version});
    if (!f.step.empty())
      parts.push_back("substr(m.task_id, 1, instr(m.task_id, '/') - 1) = ?"), b.push_back({true, false, f.step, 0, 0});
    if (!f.task.empty()) {
      if (all_digits(f.task))
        parts.push_back("substr(m.task_id, instr(m.task_id, '/') + 1) = ?");
      else
        parts.push_back("m.task_id = ?");
      b.push_back({true, false, f.task, 0, 0});
    }
    std::string s;
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? " AND " : " WHERE ") + parts[i];
    return s;
  }
  static int bind_all(Stmt& st, const std::vector<Bind>& binds, int first) {
    int i = first;
    for (const auto& b : binds) {
      if (b.is_text)
        st.bind(i, b.text);
      else if (b.is_real)
        st.bind(i, b.real);
      else
        st.bind(i, b.integer);
      ++i;
    }
    return i;
  }
  Experience row(const Stmt& st) const { return detail::read_experience(st, 1, strcat(where_, " row ", st.i64(0))); }

  std::string path_, table_, where_;
  sqlite3* db_ = nullptr;
  std::mutex mu_;
};

// ---- JSONL ----

class JsonlBrowser : public BufferBrowser {
 public:
  explicit JsonlBrowser(std::string path) : path_(std::move(path)) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError("buffer", strcat("cannot open ", path_, ": ", std::strerror(errno)));
    ::close(fd);
  }

  BrowsePage page(const BrowseFilter& f, BrowseOrder order, int64_t offset, int64_t limit) override {
    std::lock_guard<std::mutex> l(mu_);
    refresh_locked();
    BrowsePage out;
    const bool plain = !f.min_reward && !f.max_reward && !f.model_version && f.step.empty() && f.task.empty() &&
                       order == BrowseOrder::kId;
    std::vector<int64_t> ids;
    if (plain) {
      out.total = static_cast<int64_t>(starts_.size());
      for (int64_t i = offset; i < std::min<int64_t>(out.total, offset + limit); ++i) ids.push_back(i);
    } else {
      facets_locked();
      std::vector<int64_t> hit;
      for (size_t i = 0; i < facets_.size(); ++i) {
        const Facet& x = facets_[i];
        if (matches(f, x.reward, x.version, x.batch, x.task)) hit.push_back(static_cast<int64_t>(i));
      }
      if (order != BrowseOrder::kId)
        std::stable_sort(hit.begin(), hit.end(), [&](int64_t a, int64_t b) {
          const auto& ra = facets_[static_cast<size_t>(a)].reward;
          const auto& rb = facets_[static_cast<size_t>(b)].reward;
          if (!ra || !rb) return ra.has_value() && !rb.has_value();  // rewarded first
          return order == BrowseOrder::kRewardDesc ? *ra > *rb : *ra < *rb;
        });
      out.total = static_cast<int64_t>(hit.size());
      for (int64_t i = offset; i < std::min<int64_t>(out.total, offset + limit); ++i)
        ids.push_back(hit[static_cast<size_t>(i)]);
    }
    for (const int64_t id : ids) out.rows.emplace_back(id, parse_line_locked(id));
    return out;
  }

  std::optional<Experience> get(int64_t id) override {
    std::lock_guard<std::mutex> l(mu_);
    refresh_locked();
    if (id < 0 || id >= static_cast<int64_t>(starts_.size())) return std::nullopt;
    return parse_line_locked(id);
  }

  std::vector<StepSummary> steps() override {
    std::lock_guard<std::mutex> l(mu_);
    refresh_locked();
    facets_locked();
    std::map<std::string, StepSummary> by;
    std::vector<std::string> order;
    for (size_t i = 0; i < facets_.size(); ++i) {
      const Facet& x = facets_[i];
      auto [it, fresh] = by.try_emplace(x.batch);
      StepSummary& s = it->second;
      if (fresh) s.step = x.batch, order.push_back(x.batch);
      ++s.count;
      if (!x.reward) continue;
      const auto id = static_cast<int64_t>(i);
      if (s.rewarded == 0 || *x.reward > s.best) s.best = *x.reward, s.best_id = id;
      if (s.rewarded == 0 || *x.reward < s.worst) s.worst = *x.reward, s.worst_id = id;
      s.mean += (*x.reward - s.mean) / static_cast<double>(++s.rewarded);
    }
    std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
      if (all_digits(a) && all_digits(b) && a.size() != b.size()) return a.size() < b.size();
      return a < b;
    });
    std::vector<StepSummary> out;
    for (const auto& k : order) out.push_back(by[k]);
    return out;
  }

  int64_t count() override {
    std::lock_guard<std::mutex> l(mu_);
    refresh_locked();
    return static_cast<int64_t>(starts_.size());
  }

 private:
  struct Facet {
    std::optional<double> reward;
    int64_t version = 0, task = 0;
    std::string batch;
  };

  std::string read_line_locked(int64_t id) {
    const auto i = static_cast<size_t>(id);
    std::string s(lens_[i], '\0');
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError("buffer", strcat("cannot open ", path_, ": ", std::strerror(errno)));
    const ssize_t got = ::pread(fd, s.data(), s.size(), static_cast<off_t>(starts_[i]));
    ::close(fd);
    if (got != static_cast<ssize_t>(s.size()))
      throw IoError("buffer", strcat(path_, " changed while reading line ", id + 1));
    return s;
  }
  Experience parse_line_locked(int64_t id) {
    return experience_from_json(read_line_locked(id), strcat(path_, ":", id + 1));
  }
  // Extends the line index over bytes appended since the last call (a shrunk file is indexed again).
  void refresh_locked() {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError("buffer", strcat("cannot open ", path_, ": ", std::strerror(errno)));
    struct stat st {};
    ::fstat(fd, &st);
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size < indexed_) starts_.clear(), lens_.clear(), facets_.clear(), indexed_ = 0;
    if (size > indexed_) {
      void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        const char* d = static_cast<const char*>(p);
        uint64_t pos = indexed_;
        while (pos < size) {
          const void* nl = std::memchr(d + pos, '\n', size - pos);
          if (!nl) break;
          const auto end = static_cast<uint64_t>(static_cast<const char*>(nl) - d);
          uint64_t a = pos;
          while (a < end && (d[a] == ' ' || d[a] == '\r' || d[a] == '\t')) ++a;
          if (a < end) starts_.push_back(pos), lens_.push_back(static_cast<uint32_t>(end - pos));
          pos = end + 1;
        }
        indexed_ = pos;
        ::munmap(p, size);
      }
    }
    ::close(fd);
  }
  void facets_locked() {
    for (size_t i = facets_.size(); i < starts_.size(); ++i) {
      const std::string line = read_line_locked(static_cast<int64_t>(i));
      const json j = json::parse(line, nullptr, false);
      Facet x;
      if (j.is_object()) {
        if (j.contains("reward") && j["reward"].is_number()) x.reward = j["reward"].get<double>();
        if (j.contains("model_version") && j["model_version"].is_number_integer())
          x.version = j["model_version"].get<int64_t>();
        if (j.contains("eid") && j["eid"].is_object()) {
          const json& e = j["eid"];
          if (e.contains("batch")) x.batch = e["batch"].is_string() ? e["batch"].get<std::string>() : e["batch"].dump();
          if (e.contains("task") && e["task"].is_number_integer()) x.task = e["task"].get<int64_t>();
        }
      }
      facets_.push_back(std::move(x));
    }
  }

  std::string path_;
  std::mutex mu_;
  uint64_t indexed_ = 0;
  std::vector<uint64_t> starts_;
  std::vector<uint32_t> lens_;
  std::vector<Facet> facets_;
};

}  // namespace

std::unique_ptr<BufferBrowser> open_browser(const std::string& path, const std::string& table) {
  if (path.ends_with(".jsonl") || path.ends_with(".json")) return std::make_unique<JsonlBrowser>(path);
  return std::make_unique<SqliteBrowser>(path, table.empty() ? "experience_buffer" : table);
}

}  // namespace trinity::buffer
