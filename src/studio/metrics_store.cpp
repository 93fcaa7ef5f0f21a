// Incremental metrics.jsonl index and series extraction (metrics_store.h).
#include "studio/metrics_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <thread>

#include "core/error.h"

namespace trinity::studio {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A read-only mapping of a whole file (empty when the file is missing or empty).
struct Mapped {
  const char* data = nullptr;
  size_t size = 0;
  explicit Mapped(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return;
      throw IoError("studio", strcat("cannot open ", path, ": ", std::strerror(errno)));
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) data = static_cast<const char*>(p), size = static_cast<size_t>(st.st_size);
    }
    ::close(fd);
  }
  ~Mapped() {
    if (data) ::munmap(const_cast<char*>(data), size);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
};

// The closing quote of a JSON string whose opening quote is at p (< end), or nullptr.
const char* string_end(const char* p, const char* end) {
  for (++p; p < end;) {
    const char* q = static_cast<const char*>(std::memchr(p, '"', static_cast<size_t>(end - p)));
    if (!q) return nullptr;
    size_t backslashes = 0;
    for (const char* b = q - 1; b > p - 1 && *b == '\\'; --b) ++backslashes;
    if (backslashes % 2 == 0) return q;
    p = q + 1;
  }
  return nullptr;
}

bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

// Calls fn(key, value) for each member of a JSON object on one line; `value` is the raw token (a
// number, null, true/false, a quoted string, or a nested value skipped whole). Keys are given as
// written (escapes kept). False when the line is not an object.
template <typename Fn>
bool for_each_member(std::string_view s, Fn&& fn) {
  const char* p = s.data();
  const char* end = p + s.size();
  auto ws = [&] {
    while (p < end && is_ws(*p)) ++p;
  };
  ws();
  if (p >= end || *p != '{') return false;
  ++p;
  while (true) {
    ws();
    if (p >= end) return false;
    if (*p == '}') return true;
    if (*p != '"') return false;
    const char* kq = string_end(p, end);
    if (!kq) return false;
    const std::string_view key(p + 1, static_cast<size_t>(kq - p - 1));
    p = kq + 1;
    ws();
    if (p >= end || *p != ':') return false;
    ++p;
    ws();
    if (p >= end) return false;
    const char* vs = p;
    if (*p == '"') {
      const char* q = string_end(p, end);
      if (!q) return false;
      p = q + 1;
    } else if (*p == '{' || *p == '[') {
      int depth = 0;
      for (; p < end; ++p) {
        if (*p == '"') {
          p = string_end(p, end);
          if (!p) return false;
        } else if (*p == '{' || *p == '[') {
          ++depth;
        } else if ((*p == '}' || *p == ']') && --depth == 0) {
          ++p;
          break;
        }
      }
    } else {  // a number / literal: up to the next ',' (or the object's closing brace)
      const char* c = static_cast<const char*>(std::memchr(p, ',', static_cast<size_t>(end - p)));
      if (c) {
        p = c;
      } else {
        const char* b = end;
        while (b > p && (is_ws(b[-1]) || b[-1] == '}')) --b;
        p = b;
      }
    }
    const char* ve = p;
    while (ve > vs && is_ws(ve[-1])) --ve;
    fn(key, std::string_view(vs, static_cast<size_t>(ve - vs)));
    ws();
    if (p < end && *p == ',') {
      ++p;
      continue;
    }
    return p < end && *p == '}';
  }
}

double parse_number(std::string_view v) {
  double x = kNaN;
  if (v.empty() || v == "null") return kNaN;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  return r.ec == std::errc() ? x : kNaN;
}

// Role and step of a line: Monitor writes {"role":"...","step":N,...} first; other writers fall back
// to a full parse of the line. False when the line is not a JSON object.
bool role_and_step(std::string_view line, std::string_view& role, double& step) {
  constexpr std::string_view kRole = "{\"role\":\"", kStep = ",\"step\":";
  if (line.starts_with(kRole)) {
    const size_t q = line.find('"', kRole.size());
    if (q != std::string_view::npos && line.substr(q + 1, kStep.size()) == kStep) {
      role = line.substr(kRole.size(), q - kRole.size());
      const char* v = line.data() + q + 1 + kStep.size();
      const char* e = line.data() + line.size();
      const auto r = std::from_chars(v, e, step);
      if (r.ec == std::errc() && r.ptr < e && (*r.ptr == ',' || *r.ptr == '}')) return true;
    }
  }
  role = {}, step = kNaN;
  return for_each_member(line, [&](std::string_view k, std::string_view v) {
    if (k == "role" && v.size() >= 2 && v.front() == '"')
      role = v.substr(1, v.size() - 2);
    else if (k == "step")
      step = parse_number(v);
  });
}

// Finds `"key":` in `line` (first at `hint`, then near it, then anywhere) and parses the value after
// it. Returns false when the line has no such member. Updates `hint` to where it was found.
bool find_value(std::string_view line, std::string_view pattern, size_t& hint, double& value) {
  auto at = [&](size_t pos) {
    return pos + pattern.size() <= line.size() && std::memcmp(line.data() + pos, pattern.data(), pattern.size()) == 0 &&
           pos > 0 && (line[pos - 1] == ',' || line[pos - 1] == '{' || is_ws(line[pos - 1]));
  };
  size_t pos = std::string_view::npos;
  if (at(hint)) {
    pos = hint;
  } else {
    const size_t lo = std::min(line.size(), hint > 96 ? hint - 96 : 0);
    const size_t hi = std::max(lo, std::min(line.size(), hint + 96 + pattern.size()));
    for (size_t p = line.substr(lo, hi - lo).find(pattern); p != std::string_view::npos;
         p = line.substr(lo, hi - lo).find(pattern, p + 1))
      if (at(lo + p)) {
        pos = lo + p;
        break;
      }
    if (pos == std::string_view::npos)
      for (size_t p = line.find(pattern); p != std::string_view::npos; p = line.find(pattern, p + 1))
        if (at(p)) {
          pos = p;
          break;
        }
  }
  if (pos == std::string_view::npos) return false;
  hint = pos;
  size_t v = pos + pattern.size();
  while (v < line.size() && is_ws(line[v])) ++v;
  size_t e = v;
  while (e < line.size() && line[e] != ',' && line[e] != '}') ++e;
  value = parse_number(line.substr(v, e - v));
  return true;
}

}  // namespace

MetricSeries downsample(const MetricSeries& s, size_t points) {
  const size_t n = s.steps.size();
  points = std::max<size_t>(points, 4);
  if (n <= points) return s;
  MetricSeries out;
  out.steps.reserve(points);
  out.values.reserve(points);
  auto push = [&](size_t i) {
    out.steps.push_back(s.steps[i]);
    out.values.push_back(s.values[i]);
  };
  push(0);
  const size_t buckets = (points - 2) / 2;
  const size_t inner = n - 2;  // points 1 .. n-2
  for (size_t b = 0; b < buckets; ++b) {
    const size_t lo = 1 + inner * b / buckets, hi = 1 + inner * (b + 1) / buckets;
    size_t imin = SIZE_MAX, imax = SIZE_MAX;
    for (size_t i = lo; i < hi; ++i) {
      if (std::isnan(s.values[i])) continue;
      if (imin == SIZE_MAX || s.values[i] < s.values[imin]) imin = i;
      if (imax == SIZE_MAX || s.values[i] > s.values[imax]) imax = i;
    }
    if (imin == SIZE_MAX) continue;
    if (imin == imax) {
      push(imin);
    } else {
      push(std::min(imin, imax));
      push(std::max(imin, imax));
    }
  }
  push(n - 1);
  return out;
}

MetricsFile::MetricsFile(std::string path) : path_(std::move(path)) {
  reset_locked();
}

void MetricsFile::reset_locked() {
  size_ = 0;
  starts_.clear();
  lens_.clear();
  roles_.clear();
  steps_.clear();
  role_names_.clear();
  names_.clear();
  keys_lines_ = 0;
  last_line_.clear();
  columns_.clear();
  last_step_.clear();
}

void MetricsFile::refresh() {
  std::lock_guard<std::mutex> l(mu_);
  Mapped m(path_);
  // Rewritten (a resume dropped lines) or replaced: index from the start.
  const bool rewritten = m.size < size_ || (!last_line_.empty() &&
                                            std::string_view(m.data + starts_.back(), last_line_.size()) != last_line_);
  if (rewritten) reset_locked();
  if (m.size <= size_) return;
  const char* d = m.data;
  size_t pos = size_;
  while (pos < m.size) {
    const void* nlp = std::memchr(d + pos, '\n', m.size - pos);
    if (!nlp) break;  // a line still being written
    const size_t nl = static_cast<size_t>(static_cast<const char*>(nlp) - d);
    const std::string_view line(d + pos, nl - pos);
    std::string_view role;
    double step = kNaN;
    if (role_and_step(line, role, step)) {
      auto it = std::find(role_names_.begin(), role_names_.end(), role);
      if (it == role_names_.end() && role_names_.size() < 255) {
        role_names_.emplace_back(role);
        it = role_names_.end() - 1;
      }
      if (it != role_names_.end()) {
        roles_.push_back(static_cast<uint8_t>(it - role_names_.begin()));
        steps_.push_back(step);
        starts_.push_back(pos);
        lens_.push_back(static_cast<uint32_t>(std::min<size_t>(line.size(), UINT32_MAX)));
        if (!std::isnan(step)) last_step_[*it] = static_cast<int64_t>(step);
      }
    }
    pos = nl + 1;
  }
  if (!starts_.empty()) last_line_.assign(d + starts_.back(), lens_.back());
  size_ = pos;  // lines that are not metric objects are skipped, their bytes count as read
}

void MetricsFile::discover_keys_locked() {
  const size_t n = roles_.size();
  if (keys_lines_ >= n) return;
  Mapped m(path_);
  if (m.size < size_) return;  // rewritten since refresh(): the next refresh() starts over
  // Lines [from, to): each line's keys, compared in place with the previous line of its role (lines
  // of one role almost always repeat their keys, so the set is touched only on a change).
  auto scan = [&](size_t from, size_t to, std::set<std::string>& found) {
    std::vector<std::vector<std::string>> last(role_names_.size());
    std::vector<std::string_view> keys;
    for (size_t li = from; li < to; ++li) {
      keys.clear();
      for_each_member(std::string_view(m.data + starts_[li], lens_[li]), [&](std::string_view k, std::string_view) {
        if (k != "role" && k != "step" && k != "time") keys.push_back(k);
      });
      auto& prev = last[roles_[li]];
      bool same = prev.size() == keys.size();
      for (size_t i = 0; same && i < keys.size(); ++i) same = prev[i] == keys[i];
      if (same) continue;
      prev.assign(keys.begin(), keys.end());
      for (const auto& k : keys) found.insert(role_names_[roles_[li]] + ":" + std::string(k));
    }
  };
  const size_t from = keys_lines_;
  if (n - from > 200000) {  // a big file: both halves at once
    const size_t mid = from + (n - from) / 2;
    std::set<std::string> other;
    std::thread t([&] { scan(mid, n, other); });
    scan(from, mid, names_);
    t.join();
    names_.insert(other.begin(), other.end());
  } else {
    scan(from, n, names_);
  }
  keys_lines_ = n;
}

int64_t MetricsFile::lines() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int64_t>(roles_.size());
}

int64_t MetricsFile::bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int64_t>(size_);
}

std::vector<std::string> MetricsFile::series_names() {
  std::lock_guard<std::mutex> l(mu_);
  discover_keys_locked();
  return {names_.begin(), names_.end()};
}

std::map<std::string, int64_t> MetricsFile::last_steps() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_step_;
}

void MetricsFile::extend_locked(const std::vector<std::string>& names) {
  struct Want {
    Column* col;
    size_t role;
    std::string pattern;  // "key":
    size_t hint = 0;
  };
  std::vector<Want> want;
  const int64_t n = static_cast<int64_t>(roles_.size());
  int64_t from = n;
  for (const auto& name : names) {
    const auto colon = name.find(':');
    if (colon == std::string::npos) continue;
    const auto rit = std::find(role_names_.begin(), role_names_.end(), name.substr(0, colon));
    if (rit == role_names_.end()) continue;
    Column& c = columns_[name];
    if (c.lines_done >= n) continue;
    std::string pattern(1, '"');  // "key": (appended piecewise: GCC 12 warns falsely on "\"" + s + "\":")
    pattern.append(name, colon + 1, std::string::npos);
    pattern.append("\":");
    want.push_back({&c, static_cast<size_t>(rit - role_names_.begin()), std::move(pattern)});
    from = std::min(from, c.lines_done);
  }
  if (want.empty()) return;
  Mapped m(path_);
  if (m.size < size_) return;  // shrank since refresh(): the next refresh() reindexes
  for (int64_t li = from; li < n; ++li) {
    const auto i = static_cast<size_t>(li);
    const std::string_view line(m.data + starts_[i], lens_[i]);
    for (auto& w : want) {
      if (w.role != roles_[i] || w.col->lines_done > li) continue;
      double v = kNaN;
      if (find_value(line, w.pattern, w.hint, v)) {
        w.col->s.steps.push_back(steps_[i]);
        w.col->s.values.push_back(v);
      }
    }
  }
  for (auto& w : want) w.col->lines_done = n;
}

std::vector<MetricSeries> MetricsFile::series(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> l(mu_);
  if (columns_.size() > 64) columns_.clear();  // bounded memory: rebuilt on demand
  extend_locked(names);
  std::vector<MetricSeries> out;
  for (const auto& name : names) {
    const auto it = columns_.find(name);
    out.push_back(it == columns_.end() ? MetricSeries{} : it->second.s);
  }
  return out;
}

std::shared_ptr<MetricsFile> MetricsCache::get(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  auto& f = files_[path];
  if (!f) f = std::make_shared<MetricsFile>(path);
  return f;
}

}  // namespace trinity::studio
