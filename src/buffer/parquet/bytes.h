// Little-endian loads and the corrupt-data error shared by the Parquet readers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace trinity::buffer::parquet {

// IoError "[parquet] <ctx>: <msg>"; ctx names the file, column and page.
[[noreturn]] inline void corrupt(const std::string& ctx, const std::string& msg) {
  throw IoError("parquet", strcat(ctx, ": ", msg));
}

inline uint32_t le32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline uint64_t le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace trinity::buffer::parquet
