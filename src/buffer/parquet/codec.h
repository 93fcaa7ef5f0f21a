// Page decompression: UNCOMPRESSED, SNAPPY (libsnappy), GZIP (zlib), ZSTD (libzstd), LZ4_RAW and
// Hadoop-framed LZ4 (liblz4). Other codecs (LZO, BROTLI) throw UnsupportedError naming the codec and
// `ctx` (file and column). Output must be exactly `out_size` bytes or the page is corrupt (IoError).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trinity::buffer::parquet {

// Decompresses src[0..n) into out[0..out_size).
void decompress(int32_t codec, const uint8_t* src, size_t n, uint8_t* out, size_t out_size, const std::string& ctx);

}  // namespace trinity::buffer::parquet
