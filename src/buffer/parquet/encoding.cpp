// Value decoders (see encoding.h). Spec: parquet-format Encodings.md.
#include "buffer/parquet/encoding.h"

#include <algorithm>
#include <cstring>

#include "buffer/parquet/bytes.h"
#include "buffer/parquet/rle.h"
#include "core/error.h"

namespace trinity::buffer::parquet {

void Values::append_bytes(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  bytes.insert(bytes.end(), c, c + n);  // not resize + memcpy: resize zero-fills first
  offsets.push_back(bytes.size());
  ++size;
}

size_t physical_width(Type type, int32_t type_length) {
  switch (type) {
    case Type::kBoolean:
      return 1;
    case Type::kInt32:
    case Type::kFloat:
      return 4;
    case Type::kInt64:
    case Type::kDouble:
      return 8;
    case Type::kInt96:
      return 12;
    case Type::kFixedLenByteArray:
      return type_length > 0 ? static_cast<size_t>(type_length) : 0;
    case Type::kByteArray:
      return 0;
  }
  return 0;
}

void decode_plain(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx) {
  if (out.type == Type::kBoolean) {
    if ((count + 7) / 8 > n) corrupt(ctx, "PLAIN booleans run past the end of the page");
    const size_t at = out.fixed.size();
    out.fixed.resize(at + count);
    for (size_t i = 0; i < count; ++i) out.fixed[at + i] = (p[i >> 3] >> (i & 7)) & 1;
    out.size += count;
    return;
  }
  if (out.is_bytes()) {
    size_t pos = 0;
    out.offsets.reserve(out.offsets.size() + std::min(count, n / 4 + 1));
    out.bytes.reserve(out.bytes.size() + (n > 4 * count ? n - 4 * count : 0));
    for (size_t i = 0; i < count; ++i) {
      if (n - pos < 4) corrupt(ctx, strcat("PLAIN byte array ", i, " of ", count, " runs past the end of the page"));
      const uint32_t len = le32(p + pos);
      pos += 4;
      if (len > n - pos)
        corrupt(ctx, strcat("PLAIN byte array ", i, " of length ", len, " runs past the end of the page"));
      out.append_bytes(p + pos, len);
      pos += len;
    }
    return;
  }
  const size_t bytes = count * out.width;
  if (out.width == 0 || bytes / out.width != count || bytes > n)
    corrupt(ctx, strcat("PLAIN page holds ", n, " bytes, too few for ", count, " values of ", out.width, " bytes"));
  out.fixed.insert(out.fixed.end(), p, p + bytes);
  out.size += count;
}

void decode_dictionary(const uint8_t* p, size_t n, size_t count, const Values& dict, Values& out,
                       const std::string& ctx) {
  if (n < 1) corrupt(ctx, "dictionary-encoded page is empty");
  const int bw = p[0];
  std::vector<uint32_t> idx(count);
  decode_rle_hybrid(p + 1, n - 1, bw, count, idx.data(), ctx);
  for (size_t i = 0; i < count; ++i)
    if (idx[i] >= dict.size)
      corrupt(ctx, strcat("dictionary index ", idx[i], " out of range (dictionary has ", dict.size, " values)"));
  if (out.is_bytes()) {
    size_t total = 0;
    for (size_t i = 0; i < count; ++i) total += dict.offsets[idx[i] + 1] - dict.offsets[idx[i]];
    const size_t at = out.bytes.size();
    out.bytes.resize(at + total);
    out.offsets.reserve(out.offsets.size() + count);
    char* dst = out.bytes.data() + at;
    for (size_t i = 0; i < count; ++i) {
      const uint64_t a = dict.offsets[idx[i]], len = dict.offsets[idx[i] + 1] - a;
      std::memcpy(dst, dict.bytes.data() + a, len);
      dst += len;
      out.offsets.push_back(static_cast<uint64_t>(dst - out.bytes.data()));
    }
    out.size += count;
    return;
  }
  const size_t w = out.width, at = out.fixed.size();
  out.fixed.resize(at + count * w);
  uint8_t* dst = out.fixed.data() + at;
  if (w == 4) {
    for (size_t i = 0; i < count; ++i) std::memcpy(dst + 4 * i, dict.fixed.data() + 4 * size_t{idx[i]}, 4);
  } else if (w == 8) {
    for (size_t i = 0; i < count; ++i) std::memcpy(dst + 8 * i, dict.fixed.data() + 8 * size_t{idx[i]}, 8);
  } else {
    for (size_t i = 0; i < count; ++i) std::memcpy(dst + w * i, dict.fixed.data() + w * size_t{idx[i]}, w);
  }
  out.size += count;
}

void decode_rle_boolean(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx) {
  if (n < 4) corrupt(ctx, "RLE boolean page lacks its length prefix");
  const uint32_t len = le32(p);
  if (len > n - 4) corrupt(ctx, "RLE boolean run length runs past the end of the page");
  std::vector<uint32_t> v(count);
  decode_rle_hybrid(p + 4, len, 1, count, v.data(), ctx);
  for (uint32_t b : v) out.fixed.push_back(static_cast<uint8_t>(b));
  out.size += count;
}

size_t decode_delta_binary_packed(const uint8_t* p, size_t n, size_t max_values, std::vector<int64_t>& out,
                                  const std::string& ctx) {
  size_t pos = 0;
  const uint64_t block = read_uleb128(p, n, pos, ctx), minis = read_uleb128(p, n, pos, ctx);
  const uint64_t total = read_uleb128(p, n, pos, ctx);
  const uint64_t zz = read_uleb128(p, n, pos, ctx);
  int64_t last = static_cast<int64_t>(zz >> 1) ^ -static_cast<int64_t>(zz & 1);
  if (minis == 0 || block == 0 || block % minis != 0 || (block / minis) % 8 != 0 || block > (1u << 20))
    corrupt(ctx, strcat("DELTA_BINARY_PACKED header has block size ", block, " with ", minis, " miniblocks"));
  if (total > max_values)
    corrupt(ctx, strcat("DELTA_BINARY_PACKED claims ", total, " values where the page holds ", max_values));
  const size_t per_mini = static_cast<size_t>(block / minis);
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(total));
  if (total == 0) return pos;
  out[at] = last;
  size_t done = 1;
  std::vector<uint64_t> buf(per_mini);
  while (done < total) {
    const uint64_t mz = read_uleb128(p, n, pos, ctx);
    const uint64_t min_delta = (mz >> 1) ^ (~(mz & 1) + 1);
    if (minis > n - pos) corrupt(ctx, "DELTA_BINARY_PACKED miniblock widths run past the end of the page");
    const uint8_t* widths = p + pos;
    pos += minis;
    for (size_t m = 0; m < minis && done < total; ++m) {
      const int bw = widths[m];
      if (bw > 64) corrupt(ctx, strcat("DELTA_BINARY_PACKED bit width ", bw));
      const size_t take = per_mini < total - done ? per_mini : static_cast<size_t>(total - done);
      unpack_bits(p + pos, n - pos, bw, take, buf.data(), ctx);
      uint64_t acc = static_cast<uint64_t>(last);
      for (size_t i = 0; i < take; ++i) {
        acc += min_delta + buf[i];  // wrapping arithmetic, as the spec requires
        out[at + done + i] = static_cast<int64_t>(acc);
      }
      last = static_cast<int64_t>(acc);
      done += take;
      const size_t mini_bytes = per_mini * static_cast<size_t>(bw) / 8;
      pos += mini_bytes < n - pos ? mini_bytes : n - pos;
    }
  }
  return pos;
}

void decode_delta_int(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx) {
  std::vector<int64_t> v;
  decode_delta_binary_packed(p, n, count, v, ctx);
  if (v.size() < count) corrupt(ctx, strcat("DELTA_BINARY_PACKED holds ", v.size(), " values, page needs ", count));
  const size_t at = out.fixed.size();
  out.fixed.resize(at + count * out.width);
  for (size_t i = 0; i < count; ++i) {
    if (out.width == 4) {
      const int32_t x = static_cast<int32_t>(static_cast<uint32_t>(v[i]));
      std::memcpy(out.fixed.data() + at + 4 * i, &x, 4);
    } else {
      std::memcpy(out.fixed.data() + at + 8 * i, &v[i], 8);
    }
  }
  out.size += count;
}

void decode_delta_length_byte_array(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx) {
  std::vector<int64_t> lens;
  size_t pos = decode_delta_binary_packed(p, n, count, lens, ctx);
  if (lens.size() < count)
    corrupt(ctx, strcat("DELTA_LENGTH_BYTE_ARRAY holds ", lens.size(), " lengths, page needs ", count));
  for (size_t i = 0; i < count; ++i) {
    if (lens[i] < 0 || static_cast<uint64_t>(lens[i]) > n - pos)
      corrupt(ctx,
              strcat("DELTA_LENGTH_BYTE_ARRAY value ", i, " of length ", lens[i], " runs past the end of the page"));
    out.append_bytes(p + pos, static_cast<size_t>(lens[i]));
    pos += static_cast<size_t>(lens[i]);
  }
}

void decode_delta_byte_array(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx) {
  std::vector<int64_t> prefix;
  const size_t pos = decode_delta_binary_packed(p, n, count, prefix, ctx);
  if (prefix.size() < count)
    corrupt(ctx, strcat("DELTA_BYTE_ARRAY holds ", prefix.size(), " prefixes, page needs ", count));
  Values suffix;
  suffix.type = Type::kByteArray;
  suffix.width = 0;
  decode_delta_length_byte_array(p + pos, n - pos, count, suffix, ctx);
  std::string prev, cur;
  for (size_t i = 0; i < count; ++i) {
    if (prefix[i] < 0 || static_cast<uint64_t>(prefix[i]) > prev.size())
      corrupt(ctx,
              strcat("DELTA_BYTE_ARRAY prefix ", prefix[i], " longer than the previous value (", prev.size(), ")"));
    cur.assign(prev, 0, static_cast<size_t>(prefix[i]));
    cur.append(suffix.bytes.data() + suffix.offsets[i], suffix.offsets[i + 1] - suffix.offsets[i]);
    if (out.is_bytes()) {
      out.append_bytes(cur.data(), cur.size());
    } else {
      if (cur.size() != out.width)
        corrupt(ctx, strcat("DELTA_BYTE_ARRAY value of ", cur.size(), " bytes in a FIXED_LEN_BYTE_ARRAY(", out.width,
                            ") column"));
      out.fixed.insert(out.fixed.end(), cur.begin(), cur.end());
      ++out.size;
    }
    std::swap(prev, cur);
  }
}

void decode_byte_stream_split(const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx) {
  const size_t w = out.width;
  if (w == 0 || out.is_bytes() || out.type == Type::kBoolean)
    corrupt(ctx, "BYTE_STREAM_SPLIT used on a type it does not support");
  if (count * w > n) corrupt(ctx, strcat("BYTE_STREAM_SPLIT page holds ", n, " bytes, too few for ", count, " values"));
  // Streams are n / w bytes long: a page may hold more values than non-null ones needed.
  const size_t stride = n / w;
  const size_t at = out.fixed.size();
  out.fixed.resize(at + count * w);
  uint8_t* dst = out.fixed.data() + at;
  for (size_t b = 0; b < w; ++b) {
    const uint8_t* s = p + b * stride;
    for (size_t i = 0; i < count; ++i) dst[i * w + b] = s[i];
  }
  out.size += count;
}

void decode_values(Encoding encoding, const uint8_t* p, size_t n, size_t count, Values& out, const std::string& ctx) {
  const bool is_int = out.type == Type::kInt32 || out.type == Type::kInt64;
  const bool is_bin = out.type == Type::kByteArray || out.type == Type::kFixedLenByteArray;
  switch (encoding) {
    case Encoding::kPlain:
      decode_plain(p, n, count, out, ctx);
      return;
    case Encoding::kRle:
      if (out.type == Type::kBoolean) {
        decode_rle_boolean(p, n, count, out, ctx);
        return;
      }
      break;
    case Encoding::kDeltaBinaryPacked:
      if (is_int) {
        decode_delta_int(p, n, count, out, ctx);
        return;
      }
      break;
    case Encoding::kDeltaLengthByteArray:
      if (out.type == Type::kByteArray) {
        decode_delta_length_byte_array(p, n, count, out, ctx);
        return;
      }
      break;
    case Encoding::kDeltaByteArray:
      if (is_bin) {
        decode_delta_byte_array(p, n, count, out, ctx);
        return;
      }
      break;
    case Encoding::kByteStreamSplit:
      if (out.type != Type::kBoolean && out.type != Type::kByteArray && out.type != Type::kInt96) {
        decode_byte_stream_split(p, n, count, out, ctx);
        return;
      }
      break;
    default:
      break;
  }
  throw UnsupportedError("parquet", strcat(ctx, ": encoding ", encoding_name(static_cast<int32_t>(encoding)), " (",
                                           static_cast<int>(encoding), ") is not supported for ",
                                           type_name(static_cast<int32_t>(out.type)), " values"));
}

}  // namespace trinity::buffer::parquet
