// Value encodings of data and dictionary pages: PLAIN, dictionary gathers (PLAIN_DICTIONARY /
// RLE_DICTIONARY indices), RLE booleans, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY,
// DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT. Decoded values are appended to a Values buffer in their
// physical form; malformed data throws IoError naming ctx (file, column, page).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "buffer/parquet/metadata.h"

namespace trinity::buffer::parquet {

// Non-null values of one column chunk in physical form. Fixed-width types (BOOLEAN as one byte,
// INT32, INT64, INT96, FLOAT, DOUBLE, FIXED_LEN_BYTE_ARRAY) live in `fixed` (`width` bytes each);
// BYTE_ARRAY values are bytes[offsets[i], offsets[i+1]).
struct Values {
  Type type = Type::kInt32;
  size_t width = 4;
  size_t size = 0;
  std::vector<uint8_t> fixed;
  std::vector<uint64_t> offsets{0};
  std::vector<char> bytes;

  bool is_bytes() const { return type == Type::kByteArray; }
  void clear() {
    size = 0;
    fixed.clear();
    offsets.assign(1, 0);
    bytes.clear();
  }
  void append_bytes(const void* p, size_t n);
};

// Bytes per value of a fixed-width type (0 for BYTE_ARRAY).
size_t physical_width(Type type, int32_t type_length);

void decode_plain(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx);
// Dictionary indices (bit width byte + RLE hybrid) gathered from `dict`.
void decode_dictionary(const uint8_t* p, size_t n, size_t count, const Values& dict, Values& out,
                       const std::string& ctx);
// RLE booleans (4-byte length prefix, bit width 1).
void decode_rle_boolean(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx);
// DELTA_BINARY_PACKED into int64 (INT32 callers narrow); more than max_values is corrupt. Returns the
// bytes consumed.
size_t decode_delta_binary_packed(const uint8_t* p, size_t n, size_t max_values, std::vector<int64_t>& out,
                                  const std::string& ctx);
void decode_delta_int(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx);
void decode_delta_length_byte_array(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx);
void decode_delta_byte_array(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx);
void decode_byte_stream_split(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx);

// Dispatches on `encoding` (not dictionary ones); UnsupportedError for an encoding the type cannot use.
void decode_values(Encoding encoding, const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx);

}  // namespace trinity::buffer::parquet
