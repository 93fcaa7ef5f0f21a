// Tasksets and datasets from files: JSONL, JSON (array of objects), CSV and Parquet files, or
// directories of them resolved by `split` / `subset_name` like HF load_dataset (path/<subset>/, files
// named <split>* or inside a <split>/ folder, e.g. data/train-00000-of-00001.parquet; a directory
// without split-named files is all "train"). Parquet rows come from buffer/parquet/reader.h as JSON
// objects (type mapping in docs/buffer.md; where = "file: row N"). Rows are turned into Tasks with
// Trinity's `format` keys. A row missing a required key is skipped, counted and reported with its
// file:line (cfg.strict makes it a ValueError). CSV cells are strings (CSV has no types).
// A path that does not exist locally but is shaped like a Hub dataset id ("openai/gsm8k",
// "Org/Name@revision") is resolved as datasets.load_dataset does and its files come from the Hugging
// Face Hub cache (hub/data_files.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "buffer/config.h"
#include "buffer/experience.h"

namespace trinity::buffer {

// One raw row: JSON object text and where it came from ("data/train.jsonl:12").
struct RawRow {
  std::string json;
  std::string where;
};

struct LoadReport {
  int64_t rows_read = 0, rows_skipped = 0;
  std::vector<std::string> problems;  // "file:line: reason", first 100 kept
};

// kTaskAnyRow: tasks whose workflow reads its own fields (no prompt key required).
enum class DatasetKind { kTask, kTaskAnyRow, kSft, kDpo };

// Data files for (path, split, subset_name), sorted (a Hub id: in load_dataset's order). Throws
// IoError / UnsupportedError / ConfigError.
std::vector<std::string> resolve_data_files(const std::string& path, const std::string& split,
                                            const std::string& subset_name);
// All rows of one file. Rows that are not JSON objects are problems (skipped or, if strict, errors).
std::vector<RawRow> read_rows(const std::string& file, bool strict, LoadReport& report);
// Keys a row must have for this kind and format, e.g. {prompt_key} for tasks.
std::vector<std::string> required_keys(DatasetKind kind, const FormatConfig& fmt);

// A taskset loaded into memory: tasks plus (for offline_easy2hard) the row features.
class Taskset {
 public:
  static Taskset load(const TasksetConfig& cfg);
  // Raw rows of an SFT/DPO dataset, validated for `kind` (no tokenization here).
  static std::vector<RawRow> load_rows(const std::string& path, const std::string& split,
                                       const std::string& subset_name, const FormatConfig& fmt, DatasetKind kind,
                                       bool strict, LoadReport& report);

  size_t size() const { return tasks_.size(); }
  const Task& at(size_t i) const { return tasks_.at(i); }
  const TasksetConfig& config() const { return cfg_; }
  const LoadReport& report() const { return report_; }
  // Row order for offline_easy2hard: rows sorted by feature_keys descending (ties by row index).
  const std::vector<int64_t>& easy2hard_order() const { return easy2hard_; }
  // For difficulty_based: the feature_keys values of each row [N][2].
  const std::vector<std::vector<double>>& features() const { return features_; }

 private:
  TasksetConfig cfg_;
  std::vector<Task> tasks_;
  std::vector<int64_t> easy2hard_;
  std::vector<std::vector<double>> features_;
  LoadReport report_;
};

}  // namespace trinity::buffer
