// Incremental reader of a run's monitor/metrics.jsonl for the dashboard (docs/studio.md "Metrics").
// refresh() indexes only the bytes appended since the last call (a file that was rewritten -- a
// resumed run drops its later lines -- is indexed again from the start): per line its offset, role
// and step (read from the line's start, where Monitor writes them). The set of series names
// "<role>:<metric>" is scanned on demand. A series is extracted on first request in one pass over
// its role's lines (each key looked up where it was in the previous line, so a line costs a few
// comparisons, not a parse) and then extended incrementally.
// Values are parsed with from_chars, so they are bit-equal to what a JSON parser reads from the file;
// non-finite values (written as null) are NaN. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace trinity::studio {

struct MetricSeries {
  std::vector<double> steps, values;  // [n] each; values NaN where the file has null
};

// At most `points` points of `s` (points >= 4): all of them when they fit; otherwise the first and the
// last point and, for each of (points - 2) / 2 buckets of consecutive points, its minimum and maximum
// in step order (spikes survive). Points whose value is NaN count as neither.
MetricSeries downsample(const MetricSeries& s, size_t points);

class MetricsFile {
 public:
  explicit MetricsFile(std::string path);
  // Indexes appended lines. IoError only when the file exists but cannot be read.
  void refresh();
  int64_t lines() const;
  int64_t bytes() const;
  // Every series name (scans the keys of lines not scanned yet: both cores on a big file).
  std::vector<std::string> series_names();
  // The series named (refresh() first); unknown names give empty series.
  std::vector<MetricSeries> series(const std::vector<std::string>& names);
  // The last step of each role and the last value of each of `names` that has one.
  std::map<std::string, int64_t> last_steps() const;

 private:
  struct Column {
    MetricSeries s;
    int64_t lines_done = 0;  // lines of the index already scanned for it
  };
  void reset_locked();
  void discover_keys_locked();
  void extend_locked(const std::vector<std::string>& names);

  std::string path_;
  mutable std::mutex mu_;
  uint64_t size_ = 0;             // bytes indexed (through the last complete line)
  std::vector<uint64_t> starts_;  // [lines] where each indexed line starts
  std::vector<uint32_t> lens_;    // [lines] its length (without the newline)
  std::vector<uint8_t> roles_;    // [lines] index into role_names_
  std::vector<double> steps_;     // [lines]
  std::vector<std::string> role_names_;
  std::set<std::string> names_;  // role:key, of lines [0, keys_lines_)
  size_t keys_lines_ = 0;
  std::string last_line_;  // copy of the last indexed line (rewrite detection)
  std::map<std::string, Column> columns_;
  std::map<std::string, int64_t> last_step_;
};

// One MetricsFile per path, shared by all requests.
class MetricsCache {
 public:
  std::shared_ptr<MetricsFile> get(const std::string& path);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<MetricsFile>> files_;
};

}  // namespace trinity::studio
