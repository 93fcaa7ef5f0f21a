// SHA-256 against the FIPS 180-4 / NIST example vectors, fed whole and in odd-sized pieces.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/sha256.h"

namespace trinity {
namespace {

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(
      sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                 "mnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, MillionAInPieces) {
  const std::string a(1000000, 'a');
  Sha256 s;
  size_t at = 0, step = 1;
  while (at < a.size()) {  // 1, 2, 3, ... byte pieces cross every block boundary position
    const size_t n = std::min(step++ % 131, a.size() - at);
    s.update(a.data() + at, n);
    at += n;
  }
  EXPECT_EQ(s.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FileMatchesString) {
  const std::string p = (std::filesystem::temp_directory_path() / ("trinity_sha_" + std::to_string(getpid()))).string();
  const std::string text(70000, 'x');
  std::ofstream(p) << text;
  EXPECT_EQ(sha256_file(p), sha256_hex(text));
  std::filesystem::remove(p);
  EXPECT_THROW(sha256_file(p), IoError);
}

}  // namespace
}  // namespace trinity
