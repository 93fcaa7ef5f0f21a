// Parquet footer and page-header structures (the subset of parquet.thrift a reader needs) and their
// decoders over the Thrift compact protocol. Enum values are the ones in parquet.thrift; fields this
// reader does not use (statistics, indexes, encryption) are skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trinity::buffer::parquet {

enum class Type : int32_t { kBoolean = 0, kInt32, kInt64, kInt96, kFloat, kDouble, kByteArray, kFixedLenByteArray };
enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };
enum class Codec : int32_t { kUncompressed = 0, kSnappy, kGzip, kLzo, kBrotli, kLz4, kZstd, kLz4Raw };
enum class Encoding : int32_t {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9,
};
enum class PageType : int32_t { kData = 0, kIndex = 1, kDictionary = 2, kDataV2 = 3 };
// ConvertedType (legacy annotations).
enum class Converted : int32_t {
  kNone = -1,
  kUtf8 = 0,
  kMap,
  kMapKeyValue,
  kList,
  kEnum,
  kDecimal,
  kDate,
  kTimeMillis,
  kTimeMicros,
  kTimestampMillis,
  kTimestampMicros,
  kUint8,
  kUint16,
  kUint32,
  kUint64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kJson,
  kBson,
  kInterval,
};
// LogicalType union members (the field id in parquet.thrift).
enum class Logical : int32_t {
  kNone = 0,
  kString = 1,
  kMap = 2,
  kList = 3,
  kEnum = 4,
  kDecimal = 5,
  kDate = 6,
  kTime = 7,
  kTimestamp = 8,
  kInteger = 10,
  kUnknown = 11,
  kJson = 12,
  kBson = 13,
  kUuid = 14,
  kFloat16 = 15,
  kOther = 99,
};
enum class TimeUnit : int32_t { kMillis = 1, kMicros = 2, kNanos = 3 };

struct LogicalType {
  Logical kind = Logical::kNone;
  int32_t scale = 0, precision = 0;  // decimal
  bool utc = false;                  // time / timestamp: isAdjustedToUTC
  TimeUnit unit = TimeUnit::kMillis;
  int32_t bit_width = 0;  // integer
  bool is_signed = true;
};

struct SchemaElement {
  int32_t type = -1;  // Type, or -1 for groups
  int32_t type_length = 0;
  int32_t repetition = 0;  // Repetition; the root may omit it
  std::string name;
  int32_t num_children = 0;
  Converted converted = Converted::kNone;
  int32_t scale = 0, precision = 0;
  LogicalType logical;
};

struct ColumnMetaData {
  int32_t type = 0;
  std::vector<std::string> path;
  int32_t codec = 0;
  int64_t num_values = 0, total_uncompressed_size = 0, total_compressed_size = 0;
  int64_t data_page_offset = 0, dictionary_page_offset = -1;
};

struct ColumnChunk {
  std::string file_path;  // non-empty: the data lives in another file (unsupported)
  bool has_meta = false;
  ColumnMetaData meta;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t num_rows = 0;
};

struct FileMetaData {
  std::vector<SchemaElement> schema;
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::string created_by;
};

struct PageHeader {
  PageType type = PageType::kData;
  int32_t uncompressed_size = 0, compressed_size = 0;
  int32_t num_values = 0;
  Encoding encoding = Encoding::kPlain;
  Encoding def_encoding = Encoding::kRle, rep_encoding = Encoding::kRle;  // v1 levels
  int32_t num_nulls = 0, num_rows = 0, def_bytes = 0, rep_bytes = 0;      // v2
  bool v2_compressed = true;
};

// `ctx` names the file in error messages.
FileMetaData parse_file_metadata(const uint8_t* data, size_t size, const std::string& ctx);
// Decodes a page header at data[0..size); `header_size` gets its length in bytes.
PageHeader parse_page_header(const uint8_t* data, size_t size, const std::string& ctx, size_t& header_size);

const char* type_name(int32_t type);
const char* codec_name(int32_t codec);
const char* encoding_name(int32_t encoding);

}  // namespace trinity::buffer::parquet
