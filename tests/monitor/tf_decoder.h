// Test-only, independent reader for TensorBoard event files: TFRecord framing with CRC32C checks
// (bit-by-bit CRC, not the library's table) and a generic protobuf wire-format walker, used to
// decode tensorflow.Event / Summary / Summary.Value by field number.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace tfdec {

inline uint32_t crc32c_bitwise(const std::string& s) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
inline uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

inline uint64_t le(const std::string& s, size_t off, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(s.at(off + i))) << (8 * i);
  return v;
}

// Splits a TFRecord stream; returns false (and sets err) on a bad CRC or truncation.
inline bool read_records(const std::string& bytes, std::vector<std::string>& out, std::string& err) {
  size_t off = 0;
  while (off < bytes.size()) {
    if (off + 12 > bytes.size()) return err = "truncated header", false;
    const uint64_t len = le(bytes, off, 8);
    if (mask(crc32c_bitwise(bytes.substr(off, 8))) != le(bytes, off + 8, 4)) return err = "length crc", false;
    if (off + 12 + len + 4 > bytes.size()) return err = "truncated data", false;
    std::string data = bytes.substr(off + 12, len);
    if (mask(crc32c_bitwise(data)) != le(bytes, off + 12 + len, 4)) return err = "data crc", false;
    out.push_back(std::move(data));
    off += 12 + len + 4;
  }
  return true;
}

struct Field {
  int number = 0;
  int wire = 0;
  uint64_t varint = 0;  // wire 0, and raw bits for wire 1 / 5
  std::string bytes;    // wire 2
};

inline std::vector<Field> parse(const std::string& msg) {
  std::vector<Field> fields;
  size_t off = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const unsigned char b = static_cast<unsigned char>(msg.at(off++));
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  while (off < msg.size()) {
    Field f;
    const uint64_t key = varint();
    f.number = static_cast<int>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) f.varint = varint();
    else if (f.wire == 1) { f.varint = le(msg, off, 8); off += 8; }
    else if (f.wire == 5) { f.varint = le(msg, off, 4); off += 4; }
    else if (f.wire == 2) { const uint64_t n = varint(); f.bytes = msg.substr(off, n); off += n; }
    else throw std::runtime_error("unsupported wire type");
    fields.push_back(std::move(f));
  }
  return fields;
}

inline double as_double(uint64_t bits) { double d; std::memcpy(&d, &bits, 8); return d; }
inline float as_float(uint64_t bits) { uint32_t b = uint32_t(bits); float f; std::memcpy(&f, &b, 4); return f; }

struct Scalar { std::string tag; float value; };
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<Scalar> scalars;
  std::vector<std::pair<std::string, std::string>> texts;  // (tag, string_val)
};

inline Event decode_event(const std::string& rec) {
  Event e;
  for (const auto& f : parse(rec)) {
    if (f.number == 1 && f.wire == 1) e.wall_time = as_double(f.varint);
    else if (f.number == 2 && f.wire == 0) e.step = static_cast<int64_t>(f.varint);
    else if (f.number == 3 && f.wire == 2) e.file_version = f.bytes;
    else if (f.number == 5 && f.wire == 2) {
      for (const auto& v : parse(f.bytes)) {
        if (v.number != 1) continue;
        std::string tag, text;
        bool has_simple = false, is_text = false;
        float simple = 0;
        for (const auto& vf : parse(v.bytes)) {
          if (vf.number == 1) tag = vf.bytes;
          if (vf.number == 2 && vf.wire == 5) { simple = as_float(vf.varint); has_simple = true; }
          if (vf.number == 8 && vf.wire == 2) {
            for (const auto& tf : parse(vf.bytes))
              if (tf.number == 8) { text = tf.bytes; is_text = true; }
          }
        }
        if (has_simple) e.scalars.push_back({tag, simple});
        if (is_text) e.texts.emplace_back(tag, text);
      }
    }
  }
  return e;
}

}  // namespace tfdec
