// Bit unpacking and the RLE / bit-packed hybrid encoding (definition and repetition levels, boolean
// values, dictionary indices), plus the deprecated BIT_PACKED level encoding (MSB-first). Spec:
// parquet-format Encodings.md. Decoders never read past `n` bytes: short data throws IoError with ctx.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trinity::buffer::parquet {

// Little-endian bit-packed values of `bw` (0..64) bits each, LSB first: out[i] = value i.
// Needs ceil(count * bw / 8) bytes of p[0..n).
void unpack_bits(const uint8_t* p, size_t n, int bw, size_t count, uint64_t* out, const std::string& ctx);
void unpack_bits32(const uint8_t* p, size_t n, int bw, size_t count, uint32_t* out, const std::string& ctx);

// RLE / bit-packed hybrid without a length prefix; decodes `count` values of width bw (0..32).
// Returns the bytes consumed.
size_t decode_rle_hybrid(const uint8_t* p, size_t n, int bw, size_t count, uint32_t* out, const std::string& ctx);
size_t decode_rle_hybrid16(const uint8_t* p, size_t n, int bw, size_t count, int16_t* out, const std::string& ctx);

// Deprecated BIT_PACKED levels: MSB-first packing, ceil(count * bw / 8) bytes; returns them.
size_t decode_bit_packed_msb(const uint8_t* p, size_t n, int bw, size_t count, int16_t* out, const std::string& ctx);

// Bits needed for values up to max_value (0 -> 0).
inline int bit_width(uint64_t max_value) {
  int w = 0;
  while (max_value) {
    ++w;
    max_value >>= 1;
  }
  return w;
}

uint64_t read_uleb128(const uint8_t* p, size_t n, size_t& pos, const std::string& ctx);

}  // namespace trinity::buffer::parquet
