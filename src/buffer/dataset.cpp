// File-backed tasksets and datasets (see dataset.h).
#include "buffer/dataset.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <numeric>

#include "buffer/json_util.h"
#include "buffer/parquet/reader.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "hub/data_files.h"
#include "hub/repo.h"

namespace trinity::buffer {

using detail::json;
namespace fs = std::filesystem;

namespace {

std::string lower_ext(const std::string& p) {
  std::string e = fs::path(p).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

bool is_data_file(const std::string& p) {
  const std::string e = lower_ext(p);
  return e == ".jsonl" || e == ".json" || e == ".csv" || e == ".parquet";
}

void problem(LoadReport& rep, bool strict, const std::string& msg) {
  if (strict) throw ValueError("buffer", msg);
  rep.rows_skipped++;
  if (rep.problems.size() < 100) rep.problems.push_back(msg);
}

// RFC 4180 CSV: quoted fields, "" escapes, newlines inside quotes. Returns records with start lines.
std::vector<std::pair<std::vector<std::string>, int64_t>> parse_csv(const std::string& text, const std::string& file) {
  std::vector<std::pair<std::vector<std::string>, int64_t>> out;
  std::vector<std::string> rec;
  std::string field;
  bool quoted = false, any = false;
  int64_t line = 1, start = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
        else quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty()) { quoted = true; any = true; }
    else if (c == ',') { rec.push_back(std::move(field)); field.clear(); any = true; }
    else if (c == '\r') {}
    else if (c == '\n') {
      if (any || !field.empty()) { rec.push_back(std::move(field)); out.emplace_back(std::move(rec), start); }
      rec.clear(); field.clear(); any = false;
      start = ++line;
    } else { field += c; any = true; }
  }
  if (quoted) throw ValueError("buffer", strcat(file, ":", start, ": unterminated quoted CSV field"));
  if (any || !field.empty()) { rec.push_back(std::move(field)); out.emplace_back(std::move(rec), start); }
  return out;
}

std::string cell_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

bool has_value(const json& row, const std::string& key) {
  return !key.empty() && row.contains(key) && !row.at(key).is_null();
}

}  // namespace

std::vector<std::string> resolve_data_files(const std::string& path, const std::string& split,
                                            const std::string& subset_name) {
  if (path.empty()) throw ConfigError("buffer", "taskset path is empty");
  if (!fs::exists(path)) {
    // A Hugging Face Hub dataset id ("openai/gsm8k", "Org/Name@revision"): its files in the Hub cache.
    if (hub::parse_repo_id(path, hub::RepoType::kDataset)) return hub::resolve_dataset_files(path, split, subset_name);
    throw IoError("buffer", strcat("dataset path '", path, "' does not exist (and is not shaped like a Hub dataset ",
                                   "id such as openai/gsm8k)"));
  }
  if (!fs::is_directory(path)) {
    if (!is_data_file(path))
      throw UnsupportedError("buffer",
                             strcat("'", path, "': unsupported file type; expected .jsonl, .json, .csv or .parquet"));
    return {path};
  }
  std::string base = path;
  if (!subset_name.empty()) {
    base = file::join(path, subset_name);
    if (!fs::is_directory(base))
      throw IoError("buffer", strcat("subset_name '", subset_name, "': no directory '", base, "'"));
  }
  std::vector<std::string> all, matched;
  for (const auto& ent : fs::recursive_directory_iterator(base)) {
    if (!ent.is_regular_file() || !is_data_file(ent.path().string())) continue;
    // The task pipeline's report beside its output.jsonl is not data.
    if (ent.path().filename() == "task_pipeline_report.json") continue;
    all.push_back(ent.path().string());
    const std::string name = ent.path().filename().string();
    const fs::path rel = fs::relative(ent.path(), base);
    bool in_split_dir = false;
    for (auto it = rel.begin(); std::next(it) != rel.end() && it != rel.end(); ++it)
      if (it->string() == split) in_split_dir = true;
    const bool named = name.rfind(split, 0) == 0 && name.size() > split.size() &&
                       (name[split.size()] == '.' || name[split.size()] == '-' || name[split.size()] == '_');
    if (in_split_dir || named) matched.push_back(ent.path().string());
  }
  std::sort(all.begin(), all.end());
  std::sort(matched.begin(), matched.end());
  if (matched.empty() && split == "train") {
    // HF convention: a folder without split names is one "train" split.
    bool has_other_splits = false;
    for (const auto& f : all) {
      const std::string n = fs::path(f).filename().string();
      for (const char* s : {"test", "validation", "valid", "dev", "eval"})
        if (n.rfind(s, 0) == 0) has_other_splits = true;
    }
    if (!has_other_splits) matched = all;
  }
  if (matched.empty())
    throw IoError("buffer", strcat("dataset '", base, "': no data files for split '", split, "' (found ", all.size(),
                                   " data file(s); expected names like ", split, ".jsonl or ", split, "/*.jsonl)"));
  return matched;
}

namespace {

// A row check sees the row through `has(key)` (key present and not null) and returns a problem ("" = fine).
using HasKey = std::function<bool(const std::string&)>;
using RowCheck = std::function<std::string(const HasKey&)>;

// Parquet rows: JSON object text straight from the reader (buffer/parquet/reader.h); `where` is
// "file: row N" (1-based, row groups in file order).
std::vector<RawRow> read_parquet_rows(const std::string& file, bool strict, LoadReport& report, const RowCheck& check) {
  const parquet::ParquetFile pf(file);
  parquet::RowBatch b = pf.read();
  const size_t n_cols = b.columns.size();
  std::vector<RawRow> rows;
  rows.reserve(b.rows.size());
  const std::string prefix = file + ": row ";
  for (size_t r = 0; r < b.rows.size(); ++r) {
    report.rows_read++;
    std::string where = prefix + std::to_string(r + 1);  // not strcat: an ostringstream per row is slow
    if (check) {
      const uint8_t* nn = b.non_null.data() + r * n_cols;
      const HasKey has = [&](const std::string& key) {
        for (size_t c = 0; c < n_cols; ++c)
          if (b.columns[c] == key) return nn[c] != 0;
        return false;
      };
      if (const std::string p = check(has); !p.empty()) {
        problem(report, strict, strcat(where, ": ", p));
        continue;
      }
    }
    rows.push_back({std::move(b.rows[r]), std::move(where)});
  }
  return rows;
}

// Reads rows; `check` returns a problem ("" = fine) so that every problem is reported in file order.
std::vector<RawRow> read_rows_checked(const std::string& file, bool strict, LoadReport& report, const RowCheck& check) {
  const std::string ext = lower_ext(file);
  if (ext == ".parquet") return read_parquet_rows(file, strict, report, check);
  std::string text = file::read_all(file);
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // UTF-8 byte order mark (spreadsheet exports)
  std::vector<RawRow> rows;
  auto add = [&](const json& v, const std::string& where) {
    report.rows_read++;
    if (!v.is_object()) {
      problem(report, strict, strcat(where, ": row is not a JSON object"));
      return;
    }
    if (check) {
      if (const std::string p = check([&](const std::string& k) { return has_value(v, k); }); !p.empty()) {
        problem(report, strict, strcat(where, ": ", p));
        return;
      }
    }
    rows.push_back({v.dump(), where});
  };
  if (ext == ".csv") {
    auto recs = parse_csv(text, file);
    if (recs.empty()) return rows;
    const auto& header = recs[0].first;
    for (size_t r = 1; r < recs.size(); ++r) {
      const auto& [cells, line] = recs[r];
      const std::string where = strcat(file, ":", line);
      if (cells.size() != header.size()) {
        report.rows_read++;
        problem(report, strict, strcat(where, ": ", cells.size(), " CSV fields where the header has ", header.size()));
        continue;
      }
      json obj = json::object();
      for (size_t c = 0; c < cells.size(); ++c) obj[header[c]] = cells[c];
      add(obj, where);
    }
    return rows;
  }
  // A .json file holding an array is a list of rows; anything else is read as JSON Lines.
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (ext == ".json" && first != std::string::npos && text[first] == '[') {
    json arr;
    check_json_depth(text, file, kMaxJsonDepth, "buffer");
    try {
      arr = json::parse(text);
    } catch (const json::parse_error& e) {
      throw ValueError("buffer", strcat(file, ": invalid JSON array: ", e.what()));
    }
    for (size_t i = 0; i < arr.size(); ++i) add(arr[i], strcat(file, ": item ", i + 1));
    return rows;
  }
  size_t pos = 0;
  int64_t line = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    ++line;
    std::string_view l(text.data() + pos, nl - pos);
    pos = nl + 1;
    if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = strcat(file, ":", line);
    json v;
    check_json_depth(l, where, kMaxJsonDepth, "buffer");
    try {
      v = json::parse(l);
    } catch (const json::parse_error& e) {
      report.rows_read++;
      problem(report, strict, strcat(where, ": invalid JSON: ", e.what()));
      continue;
    }
    add(v, where);
  }
  return rows;
}

}  // namespace

std::vector<RawRow> read_rows(const std::string& file, bool strict, LoadReport& report) {
  return read_rows_checked(file, strict, report, nullptr);
}

std::vector<std::string> required_keys(DatasetKind kind, const FormatConfig& fmt) {
  switch (kind) {
    case DatasetKind::kTask: return {fmt.prompt_key};
    case DatasetKind::kTaskAnyRow:
      return {};
    case DatasetKind::kSft:
      if (fmt.prompt_type == "plaintext") return {fmt.prompt_key, fmt.response_key};
      return {fmt.messages_key};
    case DatasetKind::kDpo:
      if (fmt.prompt_type == "plaintext") return {fmt.prompt_key, fmt.chosen_key, fmt.rejected_key};
      return {fmt.chosen_key, fmt.rejected_key};
  }
  return {};
}

namespace {

void check_prompt_type(const FormatConfig& fmt) {
  if (fmt.prompt_type != "messages" && fmt.prompt_type != "plaintext")
    throw ConfigError("buffer", strcat("format.prompt_type '", fmt.prompt_type, "' is unknown; expected messages or plaintext"));
}

// Returns the missing required key, or "" if the row is complete.
std::string missing_key(const HasKey& has, DatasetKind kind, const FormatConfig& fmt) {
  for (const auto& k : required_keys(kind, fmt)) {
    // A task may give its conversation through messages_key instead of a prompt.
    if (kind == DatasetKind::kTask && !fmt.messages_key.empty() && has(fmt.messages_key)) continue;
    if (k.empty() || !has(k)) return k;
  }
  return "";
}

}  // namespace

std::vector<RawRow> Taskset::load_rows(const std::string& path, const std::string& split,
                                       const std::string& subset_name, const FormatConfig& fmt, DatasetKind kind,
                                       bool strict, LoadReport& report) {
  check_prompt_type(fmt);
  std::vector<RawRow> out;
  for (const auto& f : resolve_data_files(path, split, subset_name)) {
    auto check = [&](const HasKey& has) -> std::string {
      const std::string miss = missing_key(has, kind, fmt);
      return miss.empty() ? "" : strcat("missing required key '", miss, "'");
    };
    for (auto& r : read_rows_checked(f, strict, report, check)) out.push_back(std::move(r));
  }
  return out;
}

Taskset Taskset::load(const TasksetConfig& cfg) {
  if (cfg.storage_type != "file")
    throw UnsupportedError("buffer", strcat("taskset '", cfg.name, "': storage_type '", cfg.storage_type,
                                            "' is not supported for tasksets yet; use file"));
  Taskset ts;
  ts.cfg_ = cfg;
  const FormatConfig& fmt = cfg.format;
  std::vector<RawRow> rows =
      load_rows(cfg.path, cfg.split, cfg.subset_name, fmt,
                cfg.prompt_required ? DatasetKind::kTask : DatasetKind::kTaskAnyRow, cfg.strict, ts.report_);
  const json wargs = detail::parse_json(cfg.workflow_args.empty() ? "{}" : cfg.workflow_args, "workflow_args");
  const json rargs = detail::parse_json(cfg.reward_fn_args.empty() ? "{}" : cfg.reward_fn_args, "reward_fn_args");
  const std::string& selector = cfg.data_selector.selector_type;
  const bool wants_features = selector == "offline_easy2hard" || selector == "difficulty_based";
  if (selector == "difficulty_based" && cfg.data_selector.feature_keys.size() != 2)
    throw ConfigError("buffer",
                      strcat("taskset '", cfg.name, "': difficulty_based needs exactly 2 data_selector.feature_keys ",
                             "(the pass rates of a weaker and a stronger reference model), got ",
                             cfg.data_selector.feature_keys.size()));
  std::vector<std::vector<double>> features;
  for (auto& r : rows) {
    const json row = json::parse(r.json);
    Task t;
    t.raw = r.json;
    if (has_value(row, fmt.prompt_key)) t.task_desc = cell_text(row.at(fmt.prompt_key));
    if (has_value(row, fmt.response_key)) t.truth = cell_text(row.at(fmt.response_key));
    t.system_prompt = has_value(row, fmt.system_prompt_key) ? cell_text(row.at(fmt.system_prompt_key)) : fmt.system_prompt;
    t.reply_prefix = fmt.reply_prefix;
    if (has_value(row, fmt.messages_key)) t.messages = row.at(fmt.messages_key).dump();
    if (has_value(row, fmt.tools_key)) t.tools = row.at(fmt.tools_key).dump();
    t.workflow = has_value(row, fmt.workflow_key) ? cell_text(row.at(fmt.workflow_key)) : cfg.default_workflow_type;
    t.reward_fn = has_value(row, fmt.reward_fn_key) ? cell_text(row.at(fmt.reward_fn_key)) : cfg.default_reward_fn_type;
    t.workflow_args = wargs.dump();
    t.reward_fn_args = rargs.dump();
    t.rollout_args = cfg.rollout_args;
    t.repeat_times = cfg.repeat_times;
    t.is_eval = cfg.is_eval;
    if (wants_features) {
      std::vector<double> f;
      bool ok = true;
      for (const auto& k : cfg.data_selector.feature_keys) {
        if (!has_value(row, k)) { ok = false; problem(ts.report_, cfg.strict, strcat(r.where, ": missing feature key '", k, "'")); break; }
        const json& v = row.at(k);
        try {
          f.push_back(v.is_number() ? v.get<double>() : std::stod(v.get<std::string>()));
        } catch (const std::exception&) {
          ok = false;
          problem(ts.report_, cfg.strict, strcat(r.where, ": feature '", k, "' is not a number: ", v.dump()));
          break;
        }
      }
      if (!ok) continue;
      features.push_back(std::move(f));
    }
    t.index = {cfg.index, static_cast<int64_t>(ts.tasks_.size())};
    ts.tasks_.push_back(std::move(t));
  }
  if (selector == "difficulty_based") ts.features_ = features;
  if (selector == "offline_easy2hard") {
    if (cfg.data_selector.feature_keys.empty())
      throw ConfigError("buffer", strcat("taskset '", cfg.name, "': offline_easy2hard needs data_selector.feature_keys"));
    ts.easy2hard_.resize(ts.tasks_.size());
    std::iota(ts.easy2hard_.begin(), ts.easy2hard_.end(), 0);
    std::stable_sort(ts.easy2hard_.begin(), ts.easy2hard_.end(),
                     [&](int64_t a, int64_t b) { return features[static_cast<size_t>(a)] > features[static_cast<size_t>(b)]; });
  }
  if (ts.report_.rows_skipped > 0) {
    log::warn("taskset '", cfg.name, "': skipped ", ts.report_.rows_skipped, " of ", ts.report_.rows_read,
              " rows; first: ", ts.report_.problems.front());
  }
  if (ts.tasks_.empty())
    throw ValueError("buffer", strcat("taskset '", cfg.name, "' at '", cfg.path, "' has no usable rows (",
                                      ts.report_.rows_read, " read, ", ts.report_.rows_skipped, " skipped)"));
  return ts;
}

}  // namespace trinity::buffer
