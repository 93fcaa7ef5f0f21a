// Public Parquet reader: open a file, list its top-level columns, read rows of selected columns as
// compact JSON object text (what buffer::RawRow::json holds). Only the selected columns' chunks are
// read and decompressed; row groups decode in parallel (core/parallel.h) and come back in file order.
// Errors: IoError for missing / truncated / corrupt files, UnsupportedError for features this reader
// lacks; every message names the file (and the column and row group where there is one).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trinity::buffer::parquet {

struct ColumnInfo {
  std::string name;
  std::string type;  // "string", "int64", "list<struct<role: string, content: string>>", ...
  bool nullable = true;
};

struct RowBatch {
  std::vector<std::string> rows;     // one compact JSON object per row
  std::vector<uint8_t> non_null;     // [rows x columns]: 1 where the row's column value is not null
  std::vector<std::string> columns;  // the columns read, in output order
};

class ParquetFile {
 public:
  explicit ParquetFile(const std::string& path);
  ~ParquetFile();
  ParquetFile(const ParquetFile&) = delete;
  ParquetFile& operator=(const ParquetFile&) = delete;

  const std::string& path() const;
  int64_t num_rows() const;
  int64_t num_row_groups() const;
  const std::vector<ColumnInfo>& columns() const;
  // Rows of `columns` (empty = all, in schema order); an unknown name throws ValueError.
  RowBatch read(const std::vector<std::string>& columns = {}) const;
  // Rows of row group `g` only.
  RowBatch read_row_group(int64_t g, const std::vector<std::string>& columns = {}) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trinity::buffer::parquet
