// Unit tests of the Parquet reader's pieces against hand-built byte vectors and naive references:
// thrift compact protocol, RLE / bit-packed hybrid (and its edge cases), deprecated BIT_PACKED
// levels, PLAIN, DELTA_BINARY_PACKED (naive encoder here), DELTA_LENGTH_BYTE_ARRAY,
// DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT, the codecs (compressed here with the same libraries), JSON
// text primitives, and truncated / corrupted files (tests/buffer/data/*.parquet) failing with errors
// that name the file, never crashing.
#include <gtest/gtest.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "buffer/parquet/codec.h"
#include "buffer/parquet/encoding.h"
#include "buffer/parquet/json_text.h"
#include "buffer/parquet/metadata.h"
#include "buffer/parquet/reader.h"
#include "buffer/parquet/rle.h"
#include "buffer/parquet/thrift.h"
#include "core/error.h"

namespace trinity::buffer::parquet {
namespace {

using Bytes = std::vector<uint8_t>;

void uleb(Bytes& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<uint8_t>(v));
}
uint64_t zz(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

// Naive LSB-first bit packer (reference for the decoders).
Bytes pack_bits(const std::vector<uint64_t>& v, int bw) {
  Bytes out((v.size() * static_cast<size_t>(bw) + 7) / 8, 0);
  size_t bit = 0;
  for (uint64_t x : v)
    for (int b = 0; b < bw; ++b, ++bit)
      if ((x >> b) & 1) out[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
  return out;
}

std::string data_dir() {
  return std::string(TRINITY_SOURCE_DIR) + "/tests/buffer/data";
}

TEST(ParquetThrift, DecodesFieldsListsAndSkipsUnknown) {
  // struct { 1: i32 = -3, 2: string "ab", 5 (delta 3): list<i64> [1, -1], 20 (long form): struct { 1: true }, 21:
  // double }
  Bytes b = {0x15};
  uleb(b, zz(-3));
  b.push_back(0x18);
  uleb(b, 2);
  b.push_back('a');
  b.push_back('b');
  b.push_back(0x39);  // delta 3 -> id 5, list
  b.push_back(0x26);  // 2 elements of i64
  uleb(b, zz(1));
  uleb(b, zz(-1));
  b.push_back(0x0c);  // long form: type struct, id follows
  uleb(b, zz(20));
  b.push_back(0x11);  // field 1 bool true
  b.push_back(0x00);
  b.push_back(0x17);  // id 21 double
  for (int i = 0; i < 8; ++i) b.push_back(0);
  b.push_back(0x00);
  ThriftReader r(b.data(), b.size(), "t");
  r.struct_begin();
  int16_t id;
  TType t;
  ASSERT_TRUE(r.next_field(id, t));
  EXPECT_EQ(id, 1);
  EXPECT_EQ(r.i32(), -3);
  ASSERT_TRUE(r.next_field(id, t));
  EXPECT_EQ(id, 2);
  EXPECT_EQ(r.binary(), "ab");
  ASSERT_TRUE(r.next_field(id, t));
  EXPECT_EQ(id, 5);
  TType et;
  ASSERT_EQ(r.list_begin(et), 2);
  EXPECT_EQ(r.i64(), 1);
  EXPECT_EQ(r.i64(), -1);
  ASSERT_TRUE(r.next_field(id, t));
  EXPECT_EQ(id, 20);
  r.skip(t);
  ASSERT_TRUE(r.next_field(id, t));
  EXPECT_EQ(id, 21);  // delta from 20, the id before the nested struct
  r.skip(t);
  EXPECT_FALSE(r.next_field(id, t));
  r.struct_end();
  EXPECT_EQ(r.pos(), b.size());
  // Every truncation fails with the context in the message.
  for (size_t n = 0; n < b.size(); ++n) {
    ThriftReader tr(b.data(), n, "file.parquet: footer");
    try {
      tr.skip(TType::kStruct);
      ADD_FAILURE() << "truncation at " << n << " parsed";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("file.parquet: footer"), std::string::npos);
    }
  }
}

TEST(ParquetRle, HybridRunsAgainstReference) {
  std::mt19937 rng(7);
  for (int bw : {0, 1, 2, 3, 5, 8, 12, 17, 31, 32}) {
    // RLE run of 13, bit-packed 3 groups (24 values, 20 used), RLE run of 1.
    std::vector<uint64_t> vals;
    const uint64_t mask = bw == 0 ? 0 : bw == 64 ? ~0ull : (1ull << bw) - 1;
    Bytes b;
    const uint64_t rv = rng() & mask;
    uleb(b, 13 << 1);
    for (int k = 0; k < (bw + 7) / 8; ++k) b.push_back(static_cast<uint8_t>(rv >> (8 * k)));
    vals.insert(vals.end(), 13, rv);
    std::vector<uint64_t> packed(24);
    for (auto& x : packed) x = rng() & mask;
    uleb(b, (3 << 1) | 1);
    Bytes pb = pack_bits(packed, bw);
    b.insert(b.end(), pb.begin(), pb.end());
    vals.insert(vals.end(), packed.begin(), packed.end());
    const uint64_t last = rng() & mask;
    uleb(b, 1 << 1);
    for (int k = 0; k < (bw + 7) / 8; ++k) b.push_back(static_cast<uint8_t>(last >> (8 * k)));
    vals.push_back(last);
    std::vector<uint32_t> out(vals.size());
    const size_t used = decode_rle_hybrid(b.data(), b.size(), bw, out.size(), out.data(), "ctx");
    EXPECT_EQ(used, b.size()) << bw;
    for (size_t i = 0; i < vals.size(); ++i) ASSERT_EQ(out[i], vals[i]) << "bw " << bw << " i " << i;
    // Fewer values than the runs hold: stops early, no over-read.
    std::vector<uint32_t> few(20);
    decode_rle_hybrid(b.data(), b.size(), bw, few.size(), few.data(), "ctx");
    for (size_t i = 0; i < few.size(); ++i) ASSERT_EQ(few[i], vals[i]);
    // More values than present: error naming the context.
    std::vector<uint32_t> many(vals.size() + 1);
    if (bw > 0) {
      EXPECT_THROW(decode_rle_hybrid(b.data(), b.size(), bw, many.size(), many.data(), "ctx"), IoError);
    }
  }
  // A zero-length RLE run is skipped; an RLE value wider than bw is corrupt.
  Bytes z = {0x00, 0x01, 0x04, 0x01};
  std::vector<uint32_t> o(2);
  decode_rle_hybrid(z.data(), z.size(), 1, 2, o.data(), "ctx");
  EXPECT_EQ(o[0], 1u);
  Bytes wide = {0x04, 0x02};
  EXPECT_THROW(decode_rle_hybrid(wide.data(), wide.size(), 1, 2, o.data(), "ctx"), IoError);
  // Final bit-packed run cut short after the last needed value (some writers do this).
  Bytes cut = {0x03, 0b10110101};  // 1 group of 8 at bw 1, exactly one byte
  std::vector<uint32_t> c(5);
  decode_rle_hybrid(cut.data(), cut.size(), 1, 5, c.data(), "ctx");
  EXPECT_EQ((std::vector<uint32_t>{1, 0, 1, 0, 1}), c);
}

TEST(ParquetRle, UnpackAllWidthsAndMsbLevels) {
  std::mt19937_64 rng(3);
  for (int bw = 0; bw <= 64; ++bw) {
    std::vector<uint64_t> v(37);
    for (auto& x : v) x = bw == 64 ? rng() : bw == 0 ? 0 : rng() & ((1ull << bw) - 1);
    Bytes p = pack_bits(v, bw);
    std::vector<uint64_t> out(v.size());
    unpack_bits(p.data(), p.size(), bw, v.size(), out.data(), "ctx");
    ASSERT_EQ(out, v) << bw;
    if (bw > 0) {
      EXPECT_THROW(unpack_bits(p.data(), p.size() - 1, bw, v.size(), out.data(), "ctx"), IoError);
    }
  }
  // BIT_PACKED (deprecated) levels are MSB first: 0,1,2,3 at bw 2 -> 00 01 10 11.
  Bytes b = {0b00011011};
  std::vector<int16_t> lv(4);
  EXPECT_EQ(decode_bit_packed_msb(b.data(), b.size(), 2, 4, lv.data(), "ctx"), 1u);
  EXPECT_EQ((std::vector<int16_t>{0, 1, 2, 3}), lv);
}

Values values_of(Type t, size_t width = 0) {
  Values v;
  v.type = t;
  v.width = width ? width : physical_width(t, 0);
  return v;
}

TEST(ParquetEncoding, PlainAllTypes) {
  Values b = values_of(Type::kBoolean);
  Bytes bits = {0b00000101, 0b1};
  decode_plain(bits.data(), bits.size(), 9, b, "ctx");
  EXPECT_EQ(b.size, 9u);
  EXPECT_EQ((Bytes{1, 0, 1, 0, 0, 0, 0, 0, 1}), b.fixed);
  Values s = values_of(Type::kByteArray);
  Bytes sb = {2, 0, 0, 0, 'h', 'i', 0, 0, 0, 0, 1, 0, 0, 0, 'x'};
  decode_plain(sb.data(), sb.size(), 3, s, "ctx");
  ASSERT_EQ(s.size, 3u);
  EXPECT_EQ(std::string(s.bytes.begin(), s.bytes.end()), "hix");
  EXPECT_EQ((std::vector<uint64_t>{0, 2, 2, 3}), s.offsets);
  Values bad = values_of(Type::kByteArray);
  Bytes trunc = {9, 0, 0, 0, 'a'};
  EXPECT_THROW(decode_plain(trunc.data(), trunc.size(), 1, bad, "f.parquet: column 's'"), IoError);
  Values d = values_of(Type::kDouble);
  double x[2] = {1.5, -0.25};
  decode_plain(reinterpret_cast<uint8_t*>(x), 16, 2, d, "ctx");
  EXPECT_EQ(d.size, 2u);
  EXPECT_THROW(decode_plain(reinterpret_cast<uint8_t*>(x), 15, 2, d, "ctx"), IoError);
}

// Naive DELTA_BINARY_PACKED encoder (block 128, 4 miniblocks of 32).
Bytes delta_encode(const std::vector<int64_t>& v) {
  Bytes b;
  uleb(b, 128);
  uleb(b, 4);
  uleb(b, v.size());
  uleb(b, zz(v.empty() ? 0 : v[0]));
  for (size_t at = 1; at < v.size(); at += 128) {
    std::vector<int64_t> d;
    for (size_t i = at; i < at + 128 && i < v.size(); ++i)
      d.push_back(static_cast<int64_t>(static_cast<uint64_t>(v[i]) - static_cast<uint64_t>(v[i - 1])));
    int64_t mn = *std::min_element(d.begin(), d.end());
    uleb(b, zz(mn));
    Bytes widths(4, 0), body;
    for (size_t m = 0; m < 4; ++m) {
      std::vector<uint64_t> u(32, 0);
      uint64_t mx = 0;
      for (size_t k = 0; k < 32 && m * 32 + k < d.size(); ++k) {
        u[k] = static_cast<uint64_t>(d[m * 32 + k]) - static_cast<uint64_t>(mn);
        mx = std::max(mx, u[k]);
      }
      if (m * 32 >= d.size()) continue;  // trailing miniblocks without values are omitted
      widths[m] = static_cast<uint8_t>(bit_width(mx));
      Bytes p = pack_bits(u, widths[m]);
      body.insert(body.end(), p.begin(), p.end());
    }
    b.insert(b.end(), widths.begin(), widths.end());
    b.insert(b.end(), body.begin(), body.end());
  }
  return b;
}

TEST(ParquetEncoding, DeltaBinaryPackedAgainstNaiveEncoder) {
  std::mt19937_64 rng(11);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{33}, size_t{128}, size_t{129}, size_t{1000}}) {
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = i % 3 == 0 ? static_cast<int64_t>(rng()) : static_cast<int64_t>(i * 7) - 50;
    if (n > 5) v[5] = INT64_MIN, v[4] = INT64_MAX;  // wrapping deltas
    Bytes b = delta_encode(v);
    b.push_back(0xAB);  // trailing data: the decoder reports where the encoding ends
    std::vector<int64_t> out;
    const size_t used = decode_delta_binary_packed(b.data(), b.size(), n, out, "ctx");
    EXPECT_EQ(used, b.size() - 1) << n;
    EXPECT_EQ(out, v) << n;
  }
  // INT32 narrowing.
  std::vector<int64_t> small = {5, -7, 100000, INT32_MIN, INT32_MAX};
  Bytes b = delta_encode(small);
  Values o = values_of(Type::kInt32);
  decode_delta_int(b.data(), b.size(), small.size(), o, "ctx");
  for (size_t i = 0; i < small.size(); ++i) {
    int32_t x;
    std::memcpy(&x, o.fixed.data() + 4 * i, 4);
    EXPECT_EQ(x, small[i]);
  }
  // Corrupt headers.
  Bytes bad = {0x00, 0x04, 0x01, 0x00};
  std::vector<int64_t> out;
  EXPECT_THROW(decode_delta_binary_packed(bad.data(), bad.size(), 10, out, "ctx"), IoError);
  Bytes cut(b.begin(), b.begin() + 6);
  EXPECT_THROW(decode_delta_binary_packed(cut.data(), cut.size(), 10, out, "ctx"), IoError);
}

TEST(ParquetEncoding, DeltaByteArraysAndByteStreamSplit) {
  // DELTA_LENGTH_BYTE_ARRAY: lengths {3, 0, 2} then "abc" "" "de".
  Bytes dl = delta_encode({3, 0, 2});
  for (char c : std::string("abcde")) dl.push_back(static_cast<uint8_t>(c));
  Values s = values_of(Type::kByteArray);
  decode_delta_length_byte_array(dl.data(), dl.size(), 3, s, "ctx");
  EXPECT_EQ(std::string(s.bytes.begin(), s.bytes.end()), "abcde");
  EXPECT_EQ((std::vector<uint64_t>{0, 3, 3, 5}), s.offsets);
  // DELTA_BYTE_ARRAY: "apple", "apply", "ape", "b" = prefixes {0,4,2,0}, suffixes {"apple","y","e","b"}.
  Bytes db = delta_encode({0, 4, 2, 0});
  Bytes suf = delta_encode({5, 1, 1, 1});
  db.insert(db.end(), suf.begin(), suf.end());
  for (char c : std::string("appleyeb")) db.push_back(static_cast<uint8_t>(c));
  Values w = values_of(Type::kByteArray);
  decode_delta_byte_array(db.data(), db.size(), 4, w, "ctx");
  ASSERT_EQ(w.size, 4u);
  EXPECT_EQ(std::string(w.bytes.begin(), w.bytes.end()), "appleapplyapeb");
  Bytes badp = delta_encode({0, 9});
  Bytes s2 = delta_encode({1, 1});
  badp.insert(badp.end(), s2.begin(), s2.end());
  badp.push_back('a');
  badp.push_back('b');
  Values w2 = values_of(Type::kByteArray);
  EXPECT_THROW(decode_delta_byte_array(badp.data(), badp.size(), 2, w2, "ctx"), IoError);
  // BYTE_STREAM_SPLIT of floats: stream b holds byte b of every value.
  const float f[3] = {1.0f, -2.5f, 3.25e10f};
  Bytes bss(12);
  for (size_t i = 0; i < 3; ++i)
    for (size_t k = 0; k < 4; ++k) bss[k * 3 + i] = reinterpret_cast<const uint8_t*>(&f[i])[k];
  Values fv = values_of(Type::kFloat);
  decode_byte_stream_split(bss.data(), bss.size(), 3, fv, "ctx");
  EXPECT_EQ(std::memcmp(fv.fixed.data(), f, 12), 0);
  // Dictionary gather with an out-of-range index fails.
  Values dict = values_of(Type::kInt32);
  const int32_t dv[2] = {10, 20};
  decode_plain(reinterpret_cast<const uint8_t*>(dv), 8, 2, dict, "ctx");
  Bytes idx = {1, 0x03, 0b00000110};  // bw 1, 8 bit-packed: 0,1,1,0,...
  Values g = values_of(Type::kInt32);
  decode_dictionary(idx.data(), idx.size(), 3, dict, g, "ctx");
  int32_t got[3];
  std::memcpy(got, g.fixed.data(), 12);
  EXPECT_EQ(got[0], 10);
  EXPECT_EQ(got[1], 20);
  EXPECT_EQ(got[2], 20);
  Bytes idx_bad = {2, 0x02, 0x03};  // RLE run of 1 with value 3 >= 2 entries
  EXPECT_THROW(decode_dictionary(idx_bad.data(), idx_bad.size(), 1, dict, g, "ctx"), IoError);
  // An encoding the type cannot use is unsupported, naming it.
  try {
    Values bv = values_of(Type::kBoolean);
    decode_values(Encoding::kDeltaByteArray, idx.data(), idx.size(), 1, bv, "f.parquet: column 'b'");
    FAIL();
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("DELTA_BYTE_ARRAY"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("column 'b'"), std::string::npos);
  }
}

TEST(ParquetCodec, RoundTripsEachCodec) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i % 37) + " of parquet page text\n";
  const auto* src = reinterpret_cast<const uint8_t*>(text.data());
  Bytes out(text.size());
  auto check = [&](int32_t codec, const Bytes& comp) {
    std::fill(out.begin(), out.end(), 0);
    decompress(codec, comp.data(), comp.size(), out.data(), out.size(), "ctx");
    EXPECT_EQ(std::memcmp(out.data(), src, out.size()), 0) << codec_name(codec);
    // Truncated and wrong-size inputs fail cleanly.
    EXPECT_THROW(decompress(codec, comp.data(), comp.size() / 2, out.data(), out.size(), "ctx"), IoError)
        << codec_name(codec);
    Bytes small(out.size() - 1);
    EXPECT_THROW(decompress(codec, comp.data(), comp.size(), small.data(), small.size(), "ctx"), IoError)
        << codec_name(codec);
  };
  check(0, Bytes(src, src + text.size()));
  {
    size_t n = snappy_max_compressed_length(text.size());
    Bytes c(n);
    ASSERT_EQ(snappy_compress(text.data(), text.size(), reinterpret_cast<char*>(c.data()), &n), SNAPPY_OK);
    c.resize(n);
    check(1, c);
  }
  {
    uLongf n = compressBound(static_cast<uLong>(text.size()));
    Bytes c(n);
    ASSERT_EQ(compress(c.data(), &n, src, static_cast<uLong>(text.size())), Z_OK);  // zlib header: accepted too
    c.resize(n);
    check(2, c);
  }
  {
    Bytes c(ZSTD_compressBound(text.size()));
    const size_t n = ZSTD_compress(c.data(), c.size(), src, text.size(), 3);
    c.resize(n);
    check(6, c);
  }
  {
    Bytes c(static_cast<size_t>(LZ4_compressBound(static_cast<int>(text.size()))));
    const int n = LZ4_compress_default(text.data(), reinterpret_cast<char*>(c.data()), static_cast<int>(text.size()),
                                       static_cast<int>(c.size()));
    c.resize(static_cast<size_t>(n));
    check(7, c);
    // Hadoop-framed LZ4: [BE32 uncompressed][BE32 compressed][block].
    Bytes h;
    for (uint32_t v : {static_cast<uint32_t>(text.size()), static_cast<uint32_t>(n)})
      for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<uint8_t>(v >> s));
    h.insert(h.end(), c.begin(), c.end());
    check(5, h);
  }
  for (int32_t codec : {3, 4, 42}) {
    try {
      decompress(codec, src, 10, out.data(), out.size(), "f.parquet: column 'x'");
      FAIL();
    } catch (const UnsupportedError& e) {
      EXPECT_NE(std::string(e.what()).find(codec_name(codec)), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("column 'x'"), std::string::npos);
    }
  }
}

TEST(ParquetJsonText, StringsNumbersDatesDecimals) {
  std::string o;
  const std::string s = "a\"b\\c\n\x01 h\xC3\xA9 \xF0\x9F\x98\x80 bad\xFF\xC3";
  write_json_string(o, s.data(), s.size());
  EXPECT_EQ(o, "\"a\\\"b\\\\c\\n\\u0001 h\xC3\xA9 \xF0\x9F\x98\x80 bad\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9", 3));
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80", 3));  // surrogate
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF", 2));      // overlong
  o.clear();
  write_base64_string(o, reinterpret_cast<const uint8_t*>("\xff\x00\x01\x02"), 4);
  EXPECT_EQ(o, "\"/wABAg==\"");
  o.clear();
  write_double(o, 0.1);
  o += ',';
  write_double(o, std::nan(""));
  o += ',';
  write_double(o, -INFINITY);
  o += ',';
  write_float(o, 0.1f);
  o += ',';
  write_double(o, 1e300);
  EXPECT_EQ(o, "0.1,null,null,0.1,1e+300");
  o.clear();
  write_date(o, 0);
  write_date(o, -1);
  write_date(o, 19723);
  EXPECT_EQ(o, "\"1970-01-01\"\"1969-12-31\"\"2024-01-01\"");
  o.clear();
  write_timestamp(o, -1, 3, true);
  write_timestamp(o, 1704067200123456, 6, false);
  write_timestamp(o, 1704067200000000000, 9, false);
  EXPECT_EQ(o, "\"1969-12-31T23:59:59.999Z\"\"2024-01-01T00:00:00.123456\"\"2024-01-01T00:00:00\"");
  o.clear();
  write_time(o, 45296500, 3);
  EXPECT_EQ(o, "\"12:34:56.500\"");
  o.clear();
  write_decimal(o, -12345, 2);
  o += ',';
  write_decimal(o, 5, 3);
  o += ',';
  write_decimal(o, 7, -2);
  o += ',';
  write_decimal(o, INT64_MIN, 0);
  EXPECT_EQ(o, "-123.45,0.005,700,-9223372036854775808");
  o.clear();
  // 16-byte big-endian two's complement: -1 and 10^20 + 1 with scale 4.
  uint8_t m1[16];
  std::memset(m1, 0xff, 16);
  write_decimal_be(o, m1, 16, 0);
  o += ',';
  uint8_t big[16] = {0, 0, 0, 0, 0, 0, 0, 0x05, 0x6b, 0xc7, 0x5e, 0x2d, 0x63, 0x10, 0x00, 0x01};
  write_decimal_be(o, big, 16, 4);
  EXPECT_EQ(o, "-1,10000000000000000.0001");
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ParquetFileTest, FixtureReadsAndListsSchema) {
  ParquetFile f(data_dir() + "/chat_small.parquet");
  ASSERT_EQ(f.columns().size(), 3u);
  EXPECT_EQ(f.columns()[0].name, "question");
  EXPECT_EQ(f.columns()[0].type, "string");
  EXPECT_EQ(f.columns()[2].type, "list<struct<role: string, content: string>>");
  RowBatch b = f.read({"messages", "question"});
  ASSERT_EQ(b.rows.size(), static_cast<size_t>(f.num_rows()));
  EXPECT_EQ(b.rows[1],
            "{\"messages\":[{\"role\":\"user\",\"content\":\"what is 1?\"},{\"role\":\"assistant\",\"content\":null}],"
            "\"question\":\"q1\"}");
  EXPECT_THROW(f.read({"nope"}), ValueError);
}

TEST(ParquetFileTest, TruncatedAndCorruptFilesFailCleanly) {
  const std::string good = read_file(data_dir() + "/chat_small.parquet");
  ASSERT_GT(good.size(), 100u);
  const std::string dir = std::filesystem::temp_directory_path() / ("trinity_pq_fuzz_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string p = dir + "/cut.parquet";
  auto try_read = [&](const std::string& bytes) -> std::string {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    try {
      ParquetFile f(p);
      f.read();
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  };
  // Truncations: every one is an error that names the file.
  for (size_t n = 0; n < good.size(); n += (n < 64 || n + 64 > good.size()) ? 1 : 7) {
    const std::string msg = try_read(good.substr(0, n));
    EXPECT_NE(msg, "") << "truncated at " << n << " read fine";
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
  }
  // Byte flips: an error or (if the flip hits a value) a read; never a crash.
  std::mt19937 rng(5);
  int errors = 0;
  for (int k = 0; k < 400; ++k) {
    std::string bad = good;
    const size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ static_cast<char>(1 + rng() % 255));
    const std::string msg = try_read(bad);
    if (!msg.empty()) {
      ++errors;
      EXPECT_NE(msg.find(p), std::string::npos) << msg;
    }
  }
  EXPECT_GT(errors, 0);
  // Not parquet at all.
  EXPECT_NE(try_read("PAR1").find("not a parquet file"), std::string::npos);
  EXPECT_NE(try_read(std::string(100, 'x')).find("PAR1"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trinity::buffer::parquet
