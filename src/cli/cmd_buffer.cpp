// Buffer inspection commands: `trinity buffer stats|head|export --path URL`. URL is a sqlite file
// (sqlite:///x.db, x.db; "#name" picks the buffer table, default experience_buffer) or a JSONL file.
// stats: counts by status and model version plus a reward histogram; head: first rows as JSON lines
// (arrays shown as lengths unless --arrays); export: every row as lossless JSONL (arrays included).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "buffer/pg_storage.h"
#include "buffer/sqlite_storage.h"
#include "buffer/storage.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/file.h"

namespace trinity::cli {

namespace {

using json = nlohmann::json;

std::unique_ptr<buffer::ExperienceStorage> open_path(const Args& a) {
  const std::string url = a.str("path");
  const auto hash = url.find('#');
  const std::string plain = url.substr(0, hash);
  if (buffer::is_postgres_url(plain)) return buffer::open_storage_url(url);  // postgresql://...#table
  const std::string fs_path = buffer::sqlite_path_from_url(plain);
  if (!file::exists(fs_path)) throw IoError("cli", strcat("buffer '", url, "': no such file '", fs_path, "'"));
  const bool is_text = plain.ends_with(".jsonl") || plain.ends_with(".json") || plain.ends_with(".parquet");
  if (!is_text) {
    // Opening a sqlite buffer creates a missing table; for inspection a wrong name is an error instead.
    const std::string table = hash == std::string::npos ? "experience_buffer" : url.substr(hash + 1);
    const auto names = buffer::sqlite_buffer_names(fs_path);
    if (std::find(names.begin(), names.end(), table) == names.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw ConfigError("cli", strcat("buffer '", url, "': no buffer named '", table, "' in '", fs_path,
                                      "'; buffers there: ", list.empty() ? "none" : list, " (select one with #name)"));
    }
  }
  return buffer::open_storage_url(url);
}

json stats_json(const buffer::StorageStats& s, int64_t bins) {
  json j = {{"total", s.total}, {"pending", s.pending}, {"ready", s.ready}, {"leased", s.leased},
            {"consumed", s.consumed}};
  json mv = json::object();
  for (const auto& [v, n] : s.by_model_version) mv[std::to_string(v)] = n;
  j["by_model_version"] = mv;
  json r = {{"count", s.rewards.size()}};
  if (!s.rewards.empty()) {
    const auto [lo_it, hi_it] = std::minmax_element(s.rewards.begin(), s.rewards.end());
    const double lo = *lo_it, hi = *hi_it;
    double sum = 0, sq = 0;
    for (double x : s.rewards) sum += x, sq += x * x;
    const double n = static_cast<double>(s.rewards.size());
    const double mean = sum / n;
    r["min"] = lo;
    r["max"] = hi;
    r["mean"] = mean;
    r["std"] = std::sqrt(std::max(0.0, sq / n - mean * mean));
    const int64_t nb = hi > lo ? bins : 1;
    std::vector<int64_t> h(static_cast<size_t>(nb), 0);
    for (double x : s.rewards) {
      int64_t b = hi > lo ? static_cast<int64_t>((x - lo) / (hi - lo) * static_cast<double>(nb)) : 0;
      h[static_cast<size_t>(std::clamp<int64_t>(b, 0, nb - 1))]++;
    }
    json hist = json::array();
    for (int64_t b = 0; b < nb; ++b) {
      const double w = (hi - lo) / static_cast<double>(nb);
      hist.push_back({{"lo", lo + w * static_cast<double>(b)}, {"hi", lo + w * static_cast<double>(b + 1)},
                      {"count", h[static_cast<size_t>(b)]}});
    }
    r["histogram"] = hist;
  }
  j["reward"] = r;
  return j;
}

}  // namespace

int cmd_buffer_stats(const Argv& argv) {
  Args a("buffer stats", argv, {"path", "bins", "json!"});
  if (a.i64("bins", 10) <= 0) throw ConfigError("cli", strcat("buffer stats: --bins must be > 0, got ", a.i64("bins", 10)));
  auto s = open_path(a);
  const buffer::StorageStats st = s->stats();
  const json j = stats_json(st, a.i64("bins", 10));
  if (a.flag("json")) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("%s\n", s->describe().c_str());
  std::printf("experiences %lld: pending %lld, ready %lld, leased %lld, consumed %lld\n",
              static_cast<long long>(j["total"]), static_cast<long long>(j["pending"]),
              static_cast<long long>(j["ready"]), static_cast<long long>(j["leased"]),
              static_cast<long long>(j["consumed"]));
  std::printf("by model_version:");
  for (const auto& [v, n] : st.by_model_version)
    std::printf(" v%lld=%lld", static_cast<long long>(v), static_cast<long long>(n));
  std::printf("\n");
  const json& r = j["reward"];
  if (r["count"].get<int64_t>() == 0) {
    std::printf("rewards: none\n");
    return 0;
  }
  std::printf("rewards %lld: mean %.4f std %.4f min %.4f max %.4f\n", static_cast<long long>(r["count"]),
              r["mean"].get<double>(), r["std"].get<double>(), r["min"].get<double>(), r["max"].get<double>());
  int64_t most = 1;
  for (const auto& b : r["histogram"]) most = std::max(most, b["count"].get<int64_t>());
  for (const auto& b : r["histogram"]) {
    const int64_t c = b["count"].get<int64_t>();
    std::printf("  [%9.4f, %9.4f) %8lld %s\n", b["lo"].get<double>(), b["hi"].get<double>(),
                static_cast<long long>(c), std::string(static_cast<size_t>(40 * c / most), '#').c_str());
  }
  return 0;
}

int cmd_buffer_head(const Argv& argv) {
  Args a("buffer head", argv, {"path", "n", "arrays!"});
  auto s = open_path(a);
  const int64_t n = a.i64("n", 5);
  if (n < 0) throw ConfigError("cli", strcat("buffer head: --n must be >= 0, got ", n));
  for (const auto& e : s->scan(0, n)) {
    if (a.flag("arrays")) {
      std::printf("%s\n", buffer::experience_to_json(e, true).c_str());
      continue;
    }
    json j = json::parse(buffer::experience_to_json(e, false));
    j["uid"] = e.eid.uid();
    j["tokens"] = strcat("<", e.tokens.size(), " ids>");
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

int cmd_buffer_export(const Argv& argv) {
  Args a("buffer export", argv, {"path", "out"});
  auto s = open_path(a);
  const std::string out = a.str("out");
  FILE* f = out == "-" ? stdout : std::fopen(out.c_str(), "wb");
  if (!f) throw IoError("cli", strcat("buffer export: cannot open '", out, "' for writing"));
  int64_t rows = 0;
  for (int64_t off = 0;; off += 1000) {
    const auto page = s->scan(off, 1000);
    if (page.empty()) break;
    for (const auto& e : page) {
      const std::string line = buffer::experience_to_json(e, true) + "\n";
      if (std::fwrite(line.data(), 1, line.size(), f) != line.size()) {
        if (f != stdout) std::fclose(f);
        throw IoError("cli", strcat("buffer export: write to '", out, "' failed"));
      }
      ++rows;
    }
  }
  if (f != stdout && std::fclose(f) != 0) throw IoError("cli", strcat("buffer export: cannot close '", out, "'"));
  std::fprintf(stderr, "exported %lld experiences to %s\n", static_cast<long long>(rows), out.c_str());
  return 0;
}

}  // namespace trinity::cli
