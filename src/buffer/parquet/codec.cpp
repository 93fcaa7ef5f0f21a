// Codec dispatch over the system compression libraries (see codec.h).
#include "buffer/parquet/codec.h"

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "buffer/parquet/metadata.h"
#include "core/error.h"

namespace trinity::buffer::parquet {

namespace {

[[noreturn]] void corrupt_page(const std::string& ctx, const char* codec, const std::string& msg) {
  throw IoError("parquet", strcat(ctx, ": corrupt ", codec, " page: ", msg));
}

void gunzip(const uint8_t* src, size_t n, uint8_t* out, size_t out_size, const std::string& ctx) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, 15 + 32) != Z_OK) corrupt_page(ctx, "GZIP", "inflateInit2 failed");  // 32: gzip or zlib header
  size_t in_pos = 0, out_pos = 0;
  int rc = Z_OK;
  // Several gzip members may follow one another; inflate each.
  while (true) {
    zs.next_in = const_cast<Bytef*>(src + in_pos);
    zs.avail_in = static_cast<uInt>(n - in_pos);
    zs.next_out = out + out_pos;
    zs.avail_out = static_cast<uInt>(out_size - out_pos);
    rc = inflate(&zs, Z_FINISH);
    in_pos = n - zs.avail_in;
    out_pos = out_size - zs.avail_out;
    if (rc == Z_STREAM_END && in_pos < n && out_pos < out_size) {
      inflateReset(&zs);
      continue;
    }
    break;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) corrupt_page(ctx, "GZIP", strcat("inflate returned ", rc));
  if (out_pos != out_size) corrupt_page(ctx, "GZIP", strcat("inflated to ", out_pos, " bytes, header says ", out_size));
}

}  // namespace

void decompress(int32_t codec, const uint8_t* src, size_t n, uint8_t* out, size_t out_size, const std::string& ctx) {
  switch (static_cast<Codec>(codec)) {
    case Codec::kUncompressed:
      if (n != out_size) corrupt_page(ctx, "UNCOMPRESSED", strcat("page holds ", n, " bytes, header says ", out_size));
      if (n) std::memcpy(out, src, n);
      return;
    case Codec::kSnappy: {
      size_t len = 0;
      if (snappy_uncompressed_length(reinterpret_cast<const char*>(src), n, &len) != SNAPPY_OK || len != out_size)
        corrupt_page(ctx, "SNAPPY", strcat("bad length header (", len, " bytes, page header says ", out_size, ")"));
      if (snappy_uncompress(reinterpret_cast<const char*>(src), n, reinterpret_cast<char*>(out), &len) != SNAPPY_OK ||
          len != out_size)
        corrupt_page(ctx, "SNAPPY", "snappy_uncompress failed");
      return;
    }
    case Codec::kGzip:
      gunzip(src, n, out, out_size, ctx);
      return;
    case Codec::kZstd: {
      const size_t rc = ZSTD_decompress(out, out_size, src, n);
      if (ZSTD_isError(rc)) corrupt_page(ctx, "ZSTD", ZSTD_getErrorName(rc));
      if (rc != out_size) corrupt_page(ctx, "ZSTD", strcat("decompressed to ", rc, " bytes, header says ", out_size));
      return;
    }
    case Codec::kLz4Raw: {
      if (n > INT32_MAX || out_size > INT32_MAX) corrupt_page(ctx, "LZ4_RAW", "page larger than 2 GiB");
      const int rc = LZ4_decompress_safe(reinterpret_cast<const char*>(src), reinterpret_cast<char*>(out),
                                         static_cast<int>(n), static_cast<int>(out_size));
      if (rc < 0 || static_cast<size_t>(rc) != out_size)
        corrupt_page(ctx, "LZ4_RAW", strcat("LZ4_decompress_safe returned ", rc));
      return;
    }
    case Codec::kLz4: {
      // Hadoop framing: blocks of [uncompressed BE32][compressed BE32][lz4 block].
      auto be32 = [](const uint8_t* p) {
        return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
      };
      size_t ip = 0, op = 0;
      while (ip + 8 <= n && op < out_size) {
        const uint32_t ulen = be32(src + ip), clen = be32(src + ip + 4);
        ip += 8;
        if (clen > n - ip || ulen > out_size - op) corrupt_page(ctx, "LZ4", "block runs past the page");
        const int rc = LZ4_decompress_safe(reinterpret_cast<const char*>(src + ip), reinterpret_cast<char*>(out + op),
                                           static_cast<int>(clen), static_cast<int>(ulen));
        if (rc < 0 || static_cast<uint32_t>(rc) != ulen) corrupt_page(ctx, "LZ4", "bad block");
        ip += clen;
        op += ulen;
      }
      if (op != out_size || ip != n) corrupt_page(ctx, "LZ4", "Hadoop LZ4 framing does not cover the page");
      return;
    }
    default:
      throw UnsupportedError("parquet",
                             strcat(ctx, ": compression codec ", codec_name(codec), " (", codec,
                                    ") is not supported; supported: UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW, LZ4"));
  }
}

}  // namespace trinity::buffer::parquet
