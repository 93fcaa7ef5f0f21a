// RLE / bit-packed hybrid and bit unpacking (see rle.h).
#include "buffer/parquet/rle.h"

#include <cstring>

#include "core/error.h"

namespace trinity::buffer::parquet {

namespace {

[[noreturn]] void short_data(const std::string& ctx, const char* what) {
  throw IoError("parquet", strcat(ctx, ": ", what, " runs past the end of the page (truncated or corrupt)"));
}

inline uint64_t load64(const uint8_t* p, size_t avail) {
  uint64_t w = 0;
  if (avail >= 8)
    std::memcpy(&w, p, 8);
  else
    std::memcpy(&w, p, avail);
  return w;  // little-endian host (x86-64, aarch64)
}

// Templated core: T is uint32_t / uint64_t / int16_t; bw <= 64.
template <typename T>
void unpack(const uint8_t* p, size_t n, int bw, size_t count, T* out, const std::string& ctx) {
  if (bw == 0) {
    for (size_t i = 0; i < count; ++i) out[i] = 0;
    return;
  }
  const size_t need = (count * static_cast<size_t>(bw) + 7) / 8;
  if (need > n) short_data(ctx, "bit-packed run");
  const uint64_t mask = bw == 64 ? ~uint64_t{0} : (uint64_t{1} << bw) - 1;
  if (bw == 1) {
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>((p[i >> 3] >> (i & 7)) & 1);
    return;
  }
  size_t bit = 0;
  for (size_t i = 0; i < count; ++i, bit += static_cast<size_t>(bw)) {
    const size_t byte = bit >> 3;
    const unsigned shift = bit & 7;
    uint64_t v = load64(p + byte, need - byte) >> shift;
    if (shift + static_cast<unsigned>(bw) > 64) v |= static_cast<uint64_t>(p[byte + 8]) << (64 - shift);
    out[i] = static_cast<T>(v & mask);
  }
}

template <typename T>
size_t rle_hybrid(const uint8_t* p, size_t n, int bw, size_t count, T* out, const std::string& ctx) {
  if (bw < 0 || bw > 32) throw IoError("parquet", strcat(ctx, ": RLE bit width ", bw, " is out of range 0..32"));
  const size_t value_bytes = (static_cast<size_t>(bw) + 7) / 8;
  size_t pos = 0, done = 0;
  while (done < count) {
    const uint64_t header = read_uleb128(p, n, pos, ctx);
    if (header & 1) {  // bit-packed: (header >> 1) groups of 8 values
      const uint64_t groups = header >> 1;
      const size_t left = count - done;
      const size_t take = groups < (left + 7) / 8 ? static_cast<size_t>(groups) * 8 : left;
      const size_t avail = n - pos;
      const size_t run_bytes =
          bw == 0 || groups < avail ? static_cast<size_t>(groups) * static_cast<size_t>(bw) : avail;
      unpack(p + pos, n - pos, bw, take, out + done, ctx);
      // A final run may be cut short after the last value needed; never step past the end.
      pos += run_bytes < n - pos ? run_bytes : n - pos;
      done += take;
    } else {  // RLE: one value repeated (header >> 1) times
      const uint64_t run = header >> 1;
      if (value_bytes > n - pos) short_data(ctx, "RLE run");
      uint32_t v = 0;
      for (size_t b = 0; b < value_bytes; ++b) v |= static_cast<uint32_t>(p[pos + b]) << (8 * b);
      pos += value_bytes;
      if (bw < 32 && (v >> bw) != 0)
        throw IoError("parquet", strcat(ctx, ": RLE value ", v, " wider than ", bw, " bits"));
      if (run == 0) continue;
      const size_t take = run < count - done ? static_cast<size_t>(run) : count - done;
      for (size_t i = 0; i < take; ++i) out[done + i] = static_cast<T>(v);
      done += take;
    }
  }
  return pos;
}

}  // namespace

uint64_t read_uleb128(const uint8_t* p, size_t n, size_t& pos, const std::string& ctx) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= n) short_data(ctx, "varint");
    const uint8_t b = p[pos++];
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw IoError("parquet", strcat(ctx, ": varint longer than 10 bytes"));
}

void unpack_bits(const uint8_t* p, size_t n, int bw, size_t count, uint64_t* out, const std::string& ctx) {
  if (bw < 0 || bw > 64) throw IoError("parquet", strcat(ctx, ": bit width ", bw, " is out of range 0..64"));
  unpack(p, n, bw, count, out, ctx);
}

void unpack_bits32(const uint8_t* p, size_t n, int bw, size_t count, uint32_t* out, const std::string& ctx) {
  if (bw < 0 || bw > 32) throw IoError("parquet", strcat(ctx, ": bit width ", bw, " is out of range 0..32"));
  unpack(p, n, bw, count, out, ctx);
}

size_t decode_rle_hybrid(const uint8_t* p, size_t n, int bw, size_t count, uint32_t* out, const std::string& ctx) {
  return rle_hybrid(p, n, bw, count, out, ctx);
}

size_t decode_rle_hybrid16(const uint8_t* p, size_t n, int bw, size_t count, int16_t* out, const std::string& ctx) {
  if (bw > 15) throw IoError("parquet", strcat(ctx, ": level bit width ", bw, " is out of range 0..15"));
  return rle_hybrid(p, n, bw, count, out, ctx);
}

size_t decode_bit_packed_msb(const uint8_t* p, size_t n, int bw, size_t count, int16_t* out, const std::string& ctx) {
  const size_t need = (count * static_cast<size_t>(bw) + 7) / 8;
  if (need > n) short_data(ctx, "BIT_PACKED levels");
  size_t bit = 0;
  for (size_t i = 0; i < count; ++i) {
    int v = 0;
    for (int b = 0; b < bw; ++b, ++bit) v = (v << 1) | ((p[bit >> 3] >> (7 - (bit & 7))) & 1);
    out[i] = static_cast<int16_t>(v);
  }
  return need;
}

}  // namespace trinity::buffer::parquet
