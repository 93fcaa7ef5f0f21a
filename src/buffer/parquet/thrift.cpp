// Thrift compact protocol (see thrift.h); spec: thrift/doc/specs/thrift-compact-protocol.md.
#include "buffer/parquet/thrift.h"

#include <cstring>

#include "core/error.h"

namespace trinity::buffer::parquet {

void ThriftReader::fail(const std::string& msg) const {
  throw IoError("parquet", strcat(ctx_, ": corrupt metadata at byte ", pos_, ": ", msg));
}

void ThriftReader::need(size_t k) const {
  if (k > n_ - pos_) fail(strcat("needs ", k, " more byte(s) but only ", n_ - pos_, " remain (truncated?)"));
}

uint64_t ThriftReader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    need(1);
    const uint8_t b = p_[pos_++];
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("varint longer than 10 bytes");
}

int32_t ThriftReader::i32() {
  const int64_t v = zigzag();
  if (v < INT32_MIN || v > INT32_MAX) fail(strcat("i32 out of range: ", v));
  return static_cast<int32_t>(v);
}

uint8_t ThriftReader::byte() {
  need(1);
  return p_[pos_++];
}

double ThriftReader::f64() {
  need(8);
  double d;
  std::memcpy(&d, p_ + pos_, 8);
  pos_ += 8;
  return d;
}

bool ThriftReader::boolean(TType t) {
  if (t == TType::kTrue) return true;
  if (t == TType::kFalse) return false;
  return byte() == 1;  // list elements carry a byte
}

std::string ThriftReader::binary() {
  const uint64_t len = varint();
  if (len > n_ - pos_) fail(strcat("string of ", len, " bytes runs past the end"));
  std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
  pos_ += len;
  return s;
}

void ThriftReader::struct_begin() {
  if (depth_ >= 64) fail("structs nested deeper than 64");
  stack_[depth_++] = last_id_;
  last_id_ = 0;
}

void ThriftReader::struct_end() {
  last_id_ = stack_[--depth_];
}

bool ThriftReader::next_field(int16_t& id, TType& type) {
  const uint8_t b = byte();
  type = static_cast<TType>(b & 0x0f);
  if (type == TType::kStop) return false;
  if (static_cast<uint8_t>(type) > 12) fail(strcat("unknown field type ", static_cast<int>(type)));
  const int delta = b >> 4;
  if (delta != 0) {
    id = static_cast<int16_t>(last_id_ + delta);
  } else {
    const int64_t v = zigzag();
    if (v < INT16_MIN || v > INT16_MAX) fail("field id out of range");
    id = static_cast<int16_t>(v);
  }
  last_id_ = id;
  return true;
}

int64_t ThriftReader::list_begin(TType& elem) {
  const uint8_t b = byte();
  elem = static_cast<TType>(b & 0x0f);
  int64_t size = b >> 4;
  if (size == 15) {
    const uint64_t v = varint();
    if (v > n_) fail(strcat("list of ", v, " elements is longer than the metadata"));
    size = static_cast<int64_t>(v);
  }
  return size;
}

void ThriftReader::skip_element(TType type, int depth) {
  if (type == TType::kTrue || type == TType::kFalse)
    byte();  // collection bools are one byte each
  else
    skip(type, depth);
}

void ThriftReader::skip(TType type, int depth) {
  if (depth > 64) fail("values nested deeper than 64");
  switch (type) {
    case TType::kTrue:
    case TType::kFalse:
      return;
    case TType::kByte:
      byte();
      return;
    case TType::kI16:
    case TType::kI32:
    case TType::kI64:
      varint();
      return;
    case TType::kDouble:
      need(8);
      pos_ += 8;
      return;
    case TType::kBinary: {
      const uint64_t len = varint();
      if (len > n_ - pos_) fail("binary runs past the end");
      pos_ += len;
      return;
    }
    case TType::kList:
    case TType::kSet: {
      TType elem;
      const int64_t n = list_begin(elem);
      for (int64_t i = 0; i < n; ++i) skip_element(elem, depth + 1);
      return;
    }
    case TType::kMap: {
      const uint64_t n = varint();
      if (n == 0) return;
      const uint8_t kv = byte();
      for (uint64_t i = 0; i < n; ++i) {
        skip_element(static_cast<TType>(kv >> 4), depth + 1);
        skip_element(static_cast<TType>(kv & 0x0f), depth + 1);
      }
      return;
    }
    case TType::kStruct: {
      struct_begin();
      int16_t id;
      TType t;
      while (next_field(id, t)) skip(t, depth + 1);
      struct_end();
      return;
    }
    default:
      fail(strcat("cannot skip field type ", static_cast<int>(type)));
  }
}

}  // namespace trinity::buffer::parquet
