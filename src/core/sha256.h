// SHA-256 (FIPS 180-4), incremental: the Hub names LFS blobs by the SHA-256 of their content, and a
// downloaded file is checked against it. Tested against the FIPS 180-4 / NIST example vectors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trinity {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // The digest as 64 lowercase hex digits; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes
};

// Hex SHA-256 of a string / of a file's contents (IoError when it cannot be read).
std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::string& path);

}  // namespace trinity
