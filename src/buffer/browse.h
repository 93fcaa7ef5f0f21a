// Read-only browsing of a stored experience buffer (Studio's Rollouts page, docs/studio.md): pages of
// rows with filters and an order, one row by id, and per-step best / worst -- without loading the
// buffer. A sqlite buffer (a table + its _payload table) pages in SQL over its indexed columns; a
// JSONL file (one experience_to_json object per line) through a line index built once and extended
// as the file grows (filters and reward orders parse each line's few fields once, then are cached).
// Row ids: the sqlite row id, or the 0-based line number of the JSONL file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "buffer/experience.h"

namespace trinity::buffer {

struct BrowseFilter {
  std::optional<double> min_reward, max_reward;  // rows without a reward never match a reward bound
  std::optional<int64_t> model_version;
  std::string step;  // eid.batch (the explore step), "" = any
  std::string task;  // eid.task as a number, or a tid "batch/task"; "" = any
};

enum class BrowseOrder { kId, kRewardDesc, kRewardAsc };

struct BrowsePage {
  int64_t total = 0;  // rows matching the filter
  std::vector<std::pair<int64_t, Experience>> rows;
};

struct StepSummary {
  std::string step;  // eid.batch
  int64_t count = 0, rewarded = 0;
  double mean = 0;
  int64_t best_id = -1, worst_id = -1;
  double best = 0, worst = 0;
};

class BufferBrowser {
 public:
  virtual ~BufferBrowser() = default;
  virtual BrowsePage page(const BrowseFilter& f, BrowseOrder order, int64_t offset, int64_t limit) = 0;
  virtual std::optional<Experience> get(int64_t id) = 0;
  virtual std::vector<StepSummary> steps() = 0;
  virtual int64_t count() = 0;
};

// `path` a sqlite file and `table` one of its buffers (sqlite_buffer_names), opened read-only; or a
// .jsonl file (table ignored). IoError when it cannot be opened.
std::unique_ptr<BufferBrowser> open_browser(const std::string& path, const std::string& table);

}  // namespace trinity::buffer
