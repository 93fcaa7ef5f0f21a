// One column chunk -> definition levels, repetition levels and non-null values: walks its pages
// (dictionary, data v1, data v2; index pages skipped), decompresses them and decodes levels and values.
// Errors name ctx ("file: column 'a.b' (row group 3)") and the page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "buffer/parquet/encoding.h"
#include "buffer/parquet/metadata.h"
#include "buffer/parquet/schema.h"

namespace trinity::buffer::parquet {

struct ColumnData {
  std::vector<int16_t> def, rep;  // empty when the max level is 0
  size_t n_levels = 0;
  Values values;
};

// chunk[0..n) holds the column chunk's pages (starting at its first page).
void read_column_chunk(const uint8_t* chunk, size_t n, const ColumnMetaData& meta, const LeafInfo& leaf,
                       ColumnData& out, const std::string& ctx);

}  // namespace trinity::buffer::parquet
