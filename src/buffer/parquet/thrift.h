// Thrift compact-protocol reader for Parquet's footer and page headers (no Thrift library): varints,
// zigzag ints, field headers with delta ids, lists, and skipping unknown fields so newer writers'
// additions are ignored. Every read is bounds-checked; malformed input throws IoError naming `ctx`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trinity::buffer::parquet {

// Compact-protocol wire types.
enum class TType : uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

class ThriftReader {
 public:
  ThriftReader(const uint8_t* data, size_t size, std::string ctx) : p_(data), n_(size), ctx_(std::move(ctx)) {}

  size_t pos() const { return pos_; }
  [[noreturn]] void fail(const std::string& msg) const;

  // Structs: begin, then next_field until it returns false (kStop), then end.
  void struct_begin();
  bool next_field(int16_t& id, TType& type);
  void struct_end();

  uint64_t varint();
  int64_t zigzag() {
    const uint64_t v = varint();
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  int32_t i32();
  int64_t i64() { return zigzag(); }
  uint8_t byte();
  double f64();
  bool boolean(TType field_type);  // field bools live in the type nibble
  std::string binary();
  // A list header: element count and element type.
  int64_t list_begin(TType& elem);
  void skip(TType type, int depth = 0);

 private:
  void need(size_t k) const;
  void skip_element(TType type, int depth);

  const uint8_t* p_;
  size_t n_, pos_ = 0;
  std::string ctx_;
  int16_t last_id_ = 0;
  int16_t stack_[64];
  int depth_ = 0;
};

}  // namespace trinity::buffer::parquet
