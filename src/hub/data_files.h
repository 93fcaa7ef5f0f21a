// Dataset repos from Hub ids, resolved as `datasets.load_dataset(id, name=subset_name, split=split)`
// does for a repo without a loading script:
//   1. README.md YAML front matter `configs:` -- the config named subset_name (else the one marked
//      `default: true`, else the one named "default", else the only one); its `data_files` (a pattern,
//      a list, a list of {split, path} or a split -> pattern map; relative to `data_dir`).
//   2. no `configs:` -- the default patterns of datasets' data_files.py, in order: sharded
//      data/{split}-NNNNN-of-NNNNN*.*; split keywords as folder names (train/**, **/train/**,
//      train-x/**, ...); split keywords in file names ({keyword}[-._ 0-9]*, **[-._ 0-9/]{keyword}...);
//      else every file is "train". Keywords: train|training, validation|valid|dev|val,
//      test|testing|eval|evaluation. subset_name without configs selects a `<subset>/` folder
//      (trinity's local-directory convention).
// Files of supported types only (.parquet, .json, .jsonl, .csv), hidden ('.', '__') paths skipped,
// one format (the most common one, json and jsonl together), sorted by path within a pattern.
#pragma once

#include <string>
#include <vector>

namespace trinity::hub {

// Glob with fsspec's rules: '*' and '?' stay within a folder, '**' crosses folders, [..] classes.
bool glob_match(const std::string& pattern, const std::string& path);

// The repo paths (from `repo_files`) of one split. `readme`: README.md's text ("" = none).
// Throws ConfigError (unknown subset / split, no files) naming what there is.
std::vector<std::string> select_data_files(const std::vector<std::string>& repo_files, const std::string& readme,
                                           const std::string& subset, const std::string& split,
                                           const std::string& repo_id);

// Local paths of the data files of `path_or_id` (a dataset repo id, "Org/Name@revision" allowed),
// downloaded into the Hub cache when needed; nullopt-like empty result when `path_or_id` is not a
// repo id. Honours HF_HUB_OFFLINE / HF_DATASETS_OFFLINE.
std::vector<std::string> resolve_dataset_files(const std::string& path_or_id, const std::string& split,
                                               const std::string& subset);

// `trinity config check`: "Hub dataset ...: cached (...)" / "not cached: would be downloaded ...",
// without network; "" when not a repo id, "local" for a local path.
std::string describe_dataset(const std::string& path_or_id);

}  // namespace trinity::hub
