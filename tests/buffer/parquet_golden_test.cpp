// Golden test: trinity's Parquet reader vs three independent implementations. tests/js/
// parquet_oracle.mjs has DuckDB, parquet-wasm (Arrow's Rust parquet crate) and hyparquet-writer write
// files with every encoding, codec and page version each offers, and each tool's own reading of its
// file as JSON; every row must match (numbers equal as doubles, or as float32 for FLOAT columns).
// Also: projection, the schema listing, tasksets / SFT rows from parquet equal to the same data in
// JSONL (single file and an HF-style data/ directory), and corrupted oracle files failing cleanly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "buffer/dataset.h"
#include "buffer/parquet/reader.h"
#include "core/error.h"
#include "core/file.h"

namespace trinity::buffer {
namespace {

using ojson = nlohmann::ordered_json;

std::string js_dir() {
  return std::string(TRINITY_SOURCE_DIR) + "/tests/js";
}

// Runs the oracle once per process; returns its output directory.
const std::string& oracle_dir() {
  static const std::string out = [] {
    const std::string nm = js_dir() + "/node_modules/@duckdb/node-api";
    EXPECT_TRUE(file::exists(nm)) << "npm test oracles missing (" << nm << "): run scripts/setup (npm ci in tests/js)";
    const std::string dir = std::string(TRINITY_BINARY_DIR) + "/parquet_golden";
    file::make_dirs(dir);
    const std::string cmd = "node '" + js_dir() + "/parquet_oracle.mjs' '" + dir + "' > '" + dir + "/oracle.log' 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << "oracle failed: " << cmd << "\n" << file::read_all(dir + "/oracle.log");
    return dir;
  }();
  return out;
}

bool same(const ojson& a, const ojson& b, std::string& where) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    if (x == y || static_cast<float>(x) == static_cast<float>(y)) return true;
    where += ": " + a.dump() + " vs " + b.dump();
    return false;
  }
  if (a.type() != b.type()) {
    where += ": " + a.dump() + " vs " + b.dump();
    return false;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) {
      where += ": " + a.dump() + " vs " + b.dump();
      return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
      std::string w = where + "[" + std::to_string(i) + "]";
      if (!same(a[i], b[i], w)) return where = w, false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) {
      where += ": " + a.dump() + " vs " + b.dump();
      return false;
    }
    auto ib = b.begin();
    for (auto ia = a.begin(); ia != a.end(); ++ia, ++ib) {
      std::string w = where + "." + ia.key();
      if (ia.key() != ib.key()) return where = w + ": key order differs (" + ib.key() + ")", false;
      if (!same(ia.value(), ib.value(), w)) return where = w, false;
    }
    return true;
  }
  if (a != b) {
    where += ": " + a.dump() + " vs " + b.dump();
    return false;
  }
  return true;
}

ojson read_json(const std::string& p) {
  return ojson::parse(file::read_all(p));
}

TEST(ParquetGolden, EveryRowMatchesTheWritersOwnReading) {
  const std::string dir = oracle_dir();
  const ojson manifest = read_json(dir + "/manifest.json");
  ASSERT_GE(manifest.size(), 20u);
  std::map<std::string, int> per_tool;
  for (const auto& c : manifest) {
    const std::string name = c["name"], path = dir + "/" + name + ".parquet";
    SCOPED_TRACE(name);
    if (c.contains("expect_error")) {
      try {
        parquet::ParquetFile(path).read();
        ADD_FAILURE() << name << ": expected an error naming " << c["expect_error"];
      } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find(c["expect_error"].get<std::string>()), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      }
      continue;
    }
    const ojson want = read_json(dir + "/" + name + ".json");
    parquet::RowBatch got = parquet::ParquetFile(path).read();
    ASSERT_EQ(got.rows.size(), want.size());
    int bad = 0;
    for (size_t r = 0; r < want.size() && bad < 5; ++r) {
      std::string where = "row " + std::to_string(r);
      const ojson g = ojson::parse(got.rows[r]);
      if (!same(g, want[r], where)) {
        ++bad;
        ADD_FAILURE() << name << " " << where;
      }
    }
    per_tool[c["tool"].get<std::string>()]++;
  }
  EXPECT_GE(per_tool["duckdb"], 6);
  EXPECT_GE(per_tool["parquet-wasm"], 8);
  EXPECT_GE(per_tool["hyparquet"], 4);
}

TEST(ParquetGolden, ProjectionAndSchema) {
  const std::string dir = oracle_dir();
  parquet::ParquetFile f(dir + "/duckdb_zstd_v2.parquet");
  std::map<std::string, std::string> types;
  for (const auto& c : f.columns()) types[c.name] = c.type;
  EXPECT_EQ(types["messages"], "list<struct<role: string, content: string>>");
  EXPECT_EQ(types["mp"], "map<string, int64>");
  EXPECT_EQ(types["u8"], "uint32");
  EXPECT_EQ(types["dec38"], "decimal(38,10)");
  EXPECT_EQ(types["ll"], "list<list<int64>>");
  EXPECT_EQ(types["st"], "struct<x: int64, y: string, z: list<int64>>");
  EXPECT_EQ(types["tstz"], "timestamp[utc]");
  const ojson want = read_json(dir + "/duckdb_zstd_v2.json");
  parquet::RowBatch b = f.read({"s", "id", "messages"});
  ASSERT_EQ(b.rows.size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    ojson w;
    w["s"] = want[r]["s"];
    w["id"] = want[r]["id"];
    w["messages"] = want[r]["messages"];
    std::string where = "row " + std::to_string(r);
    ASSERT_TRUE(same(ojson::parse(b.rows[r]), w, where)) << where;
    EXPECT_EQ(b.non_null[r * 3], want[r]["s"].is_null() ? 0 : 1);
  }
  // One row group alone (DuckDB writes row groups of 2048 rows at least).
  ASSERT_GE(f.num_row_groups(), 2);
  EXPECT_EQ(f.read_row_group(1, {"id"}).rows.front(), "{\"id\":2048}");
}

TEST(ParquetGolden, TasksetAndSftFromParquetEqualJsonl) {
  const std::string dir = oracle_dir();
  const ojson rows = read_json(dir + "/duckdb_chat.json");
  const std::string work = dir + "/integration";
  file::make_dirs(work + "/hf/data");
  std::string jsonl;
  for (const auto& r : rows) jsonl += r.dump() + "\n";
  file::write_atomic(work + "/chat.jsonl", jsonl);
  const std::string pq = file::read_all(dir + "/duckdb_chat.parquet");
  file::write_atomic(work + "/chat.parquet", pq);
  file::write_atomic(work + "/hf/data/train-00000-of-00001.parquet", pq);
  file::write_atomic(work + "/hf/data/test-00000-of-00001.parquet", pq);

  TasksetConfig c;
  c.name = "t";
  c.format.prompt_key = "question";
  c.format.response_key = "answer";
  c.path = work + "/chat.jsonl";
  const Taskset a = Taskset::load(c);
  c.path = work + "/chat.parquet";
  const Taskset b = Taskset::load(c);
  c.path = work + "/hf";
  const Taskset h = Taskset::load(c);
  ASSERT_EQ(a.size(), rows.size());
  ASSERT_EQ(b.size(), a.size());
  ASSERT_EQ(h.size(), a.size());  // only the train split
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b.at(i).task_desc, a.at(i).task_desc);
    EXPECT_EQ(b.at(i).truth, a.at(i).truth);
    EXPECT_EQ(h.at(i).truth, a.at(i).truth);
    EXPECT_EQ(nlohmann::json::parse(b.at(i).raw), nlohmann::json::parse(a.at(i).raw));
  }
  FormatConfig fmt;
  fmt.messages_key = "messages";
  LoadReport ra, rb;
  const auto sa = Taskset::load_rows(work + "/chat.jsonl", "train", "", fmt, DatasetKind::kSft, true, ra);
  const auto sb = Taskset::load_rows(work + "/hf", "train", "", fmt, DatasetKind::kSft, true, rb);
  ASSERT_EQ(sb.size(), sa.size());
  for (size_t i = 0; i < sa.size(); ++i)
    EXPECT_EQ(nlohmann::json::parse(sb[i].json), nlohmann::json::parse(sa[i].json));
  EXPECT_EQ(sb[3].where, work + "/hf/data/train-00000-of-00001.parquet: row 4");
  // A missing required column: every row is a problem naming file and row.
  FormatConfig dpo;
  LoadReport rd;
  EXPECT_TRUE(Taskset::load_rows(work + "/chat.parquet", "train", "", dpo, DatasetKind::kDpo, false, rd).empty());
  EXPECT_EQ(rd.rows_skipped, static_cast<int64_t>(rows.size()));
  EXPECT_NE(rd.problems.front().find("chat.parquet: row 1: missing required key 'chosen'"), std::string::npos)
      << rd.problems.front();
}

TEST(ParquetGolden, CorruptedOracleFilesFailCleanly) {
  const std::string dir = oracle_dir();
  for (const char* name : {"duckdb_snappy_v1", "pw_delta_v2_gzip", "pw_small_pages_lz4", "hy_delta_bss"}) {
    const std::string good = file::read_all(dir + "/" + name + ".parquet");
    const std::string p = dir + "/fuzz_" + name + ".parquet";
    std::mt19937 rng(9);
    int errors = 0;
    for (int k = 0; k < 60; ++k) {
      std::string bad = good;
      if (k % 3 == 0) {
        bad.resize(rng() % bad.size());
      } else {
        for (int j = 0; j < 4; ++j) {
          const size_t at = rng() % bad.size();
          bad[at] = static_cast<char>(bad[at] ^ static_cast<char>(1 + rng() % 255));
        }
      }
      { std::ofstream(p, std::ios::binary | std::ios::trunc) << bad; }
      try {
        parquet::ParquetFile(p).read();
      } catch (const Error& e) {
        ++errors;
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
      }
    }
    EXPECT_GT(errors, 20) << name;
  }
}

}  // namespace
}  // namespace trinity::buffer
