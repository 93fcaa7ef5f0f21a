// Column chunk page walker (see column_reader.h).
#include "buffer/parquet/column_reader.h"

#include <cstring>

#include "buffer/parquet/bytes.h"
#include "buffer/parquet/codec.h"
#include "buffer/parquet/rle.h"
#include "core/error.h"

namespace trinity::buffer::parquet {

namespace {

constexpr int64_t kMaxPageBytes = int64_t{1} << 30;
constexpr int32_t kMaxPageValues = int32_t{1} << 26;  // corrupt headers must not make us allocate without bound

// v1 levels: RLE with a 4-byte length prefix, or deprecated BIT_PACKED. Returns the bytes consumed.
size_t read_levels_v1(Encoding enc, const uint8_t* p, size_t n, int16_t max_level, size_t count, int16_t* out,
                      const std::string& ctx) {
  const int bw = bit_width(static_cast<uint64_t>(max_level));
  if (enc == Encoding::kRle) {
    if (n < 4) corrupt(ctx, "levels lack their 4-byte length");
    uint32_t len;
    std::memcpy(&len, p, 4);
    if (len > n - 4) corrupt(ctx, strcat("levels of ", len, " bytes run past the end of the page"));
    decode_rle_hybrid16(p + 4, len, bw, count, out, ctx);
    return 4 + size_t{len};
  }
  if (enc == Encoding::kBitPacked) return decode_bit_packed_msb(p, n, bw, count, out, ctx);
  throw UnsupportedError(
      "parquet", strcat(ctx, ": level encoding ", encoding_name(static_cast<int32_t>(enc)), " is not supported"));
}

void check_levels(const int16_t* lv, size_t count, int16_t max_level, const std::string& ctx, const char* what) {
  for (size_t i = 0; i < count; ++i)
    if (lv[i] > max_level) corrupt(ctx, strcat(what, " level ", lv[i], " exceeds the column's maximum ", max_level));
}

}  // namespace

void read_column_chunk(const uint8_t* chunk, size_t n, const ColumnMetaData& meta, const LeafInfo& leaf,
                       ColumnData& out, const std::string& ctx) {
  out.def.clear();
  out.rep.clear();
  out.n_levels = 0;
  out.values.clear();
  out.values.type = leaf.physical;
  out.values.width = physical_width(leaf.physical, leaf.type_length);
  Values dict;
  dict.type = leaf.physical;
  dict.width = out.values.width;
  bool have_dict = false;
  if (meta.num_values < 0) corrupt(ctx, strcat("column chunk claims ", meta.num_values, " values"));
  const size_t total = static_cast<size_t>(meta.num_values);
  std::vector<uint8_t> buf;
  size_t pos = 0;
  int page_no = 0;
  while (out.n_levels < total) {
    if (pos >= n) corrupt(ctx, strcat("column chunk ends after ", out.n_levels, " of ", total, " values (truncated?)"));
    size_t hs = 0;
    const PageHeader h = parse_page_header(chunk + pos, n - pos, ctx, hs);
    pos += hs;
    const std::string pctx = strcat(ctx, " page ", page_no++);
    if (h.compressed_size < 0 || static_cast<size_t>(h.compressed_size) > n - pos)
      corrupt(pctx,
              strcat("page of ", h.compressed_size, " bytes runs past the column chunk (", n - pos, " bytes left)"));
    if (h.uncompressed_size < 0 || h.uncompressed_size > kMaxPageBytes)
      corrupt(pctx, strcat("page claims ", h.uncompressed_size, " uncompressed bytes"));
    const uint8_t* page = chunk + pos;
    const size_t csize = static_cast<size_t>(h.compressed_size), usize = static_cast<size_t>(h.uncompressed_size);
    pos += csize;
    if (h.type == PageType::kIndex) continue;
    if (h.num_values < 0 || h.num_values > kMaxPageValues)
      corrupt(pctx, strcat("page claims ", h.num_values, " values"));
    const size_t count = static_cast<size_t>(h.num_values);
    if (h.type == PageType::kDictionary) {
      if (h.encoding != Encoding::kPlain && h.encoding != Encoding::kPlainDictionary)
        throw UnsupportedError(
            "parquet", strcat(pctx, ": dictionary page encoding ", encoding_name(static_cast<int32_t>(h.encoding))));
      buf.resize(usize);
      decompress(meta.codec, page, csize, buf.data(), usize, pctx);
      dict.clear();
      decode_plain(buf.data(), usize, count, dict, pctx);
      have_dict = true;
      continue;
    }
    if (h.type != PageType::kData && h.type != PageType::kDataV2)
      corrupt(pctx, strcat("unknown page type ", static_cast<int>(h.type)));
    if (count > total - out.n_levels)
      corrupt(pctx,
              strcat("page holds ", count, " values, more than the ", total - out.n_levels, " left in the chunk"));
    const uint8_t* vals = nullptr;
    size_t vals_n = 0;
    const size_t at = out.n_levels;
    if (leaf.max_def > 0) out.def.resize(at + count);
    if (leaf.max_rep > 0) out.rep.resize(at + count);
    if (h.type == PageType::kData) {
      buf.resize(usize);
      decompress(meta.codec, page, csize, buf.data(), usize, pctx);
      size_t off = 0;
      if (leaf.max_rep > 0)
        off += read_levels_v1(h.rep_encoding, buf.data(), usize, leaf.max_rep, count, out.rep.data() + at, pctx);
      if (leaf.max_def > 0)
        off += read_levels_v1(h.def_encoding, buf.data() + off, usize - off, leaf.max_def, count, out.def.data() + at,
                              pctx);
      vals = buf.data() + off;
      vals_n = usize - off;
    } else {
      if (h.def_bytes < 0 || h.rep_bytes < 0 ||
          static_cast<size_t>(h.def_bytes) + static_cast<size_t>(h.rep_bytes) > csize ||
          static_cast<size_t>(h.def_bytes) + static_cast<size_t>(h.rep_bytes) > usize)
        corrupt(pctx, strcat("v2 level sections (", h.rep_bytes, " + ", h.def_bytes, " bytes) exceed the page"));
      const size_t rb = static_cast<size_t>(h.rep_bytes), db = static_cast<size_t>(h.def_bytes);
      if (leaf.max_rep > 0)
        decode_rle_hybrid16(page, rb, bit_width(static_cast<uint64_t>(leaf.max_rep)), count, out.rep.data() + at, pctx);
      if (leaf.max_def > 0)
        decode_rle_hybrid16(page + rb, db, bit_width(static_cast<uint64_t>(leaf.max_def)), count, out.def.data() + at,
                            pctx);
      const uint8_t* body = page + rb + db;
      const size_t body_c = csize - rb - db, body_u = usize - rb - db;
      if (h.v2_compressed && meta.codec != 0) {
        buf.resize(body_u);
        decompress(meta.codec, body, body_c, buf.data(), body_u, pctx);
        vals = buf.data();
        vals_n = body_u;
      } else {
        vals = body;
        vals_n = body_c;
      }
    }
    if (leaf.max_rep > 0) check_levels(out.rep.data() + at, count, leaf.max_rep, pctx, "repetition");
    size_t non_null = count;
    if (leaf.max_def > 0) {
      check_levels(out.def.data() + at, count, leaf.max_def, pctx, "definition");
      non_null = 0;
      for (size_t i = 0; i < count; ++i) non_null += out.def[at + i] == leaf.max_def;
    }
    out.n_levels += count;
    if (non_null == 0) continue;
    if (h.encoding == Encoding::kPlainDictionary || h.encoding == Encoding::kRleDictionary) {
      if (!have_dict) corrupt(pctx, "dictionary-encoded page without a dictionary page");
      decode_dictionary(vals, vals_n, non_null, dict, out.values, pctx);
    } else {
      decode_values(h.encoding, vals, vals_n, non_null, out.values, pctx);
    }
  }
}

}  // namespace trinity::buffer::parquet
