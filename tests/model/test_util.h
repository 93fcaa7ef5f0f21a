// Helpers for the model IO tests: a per-test scratch directory, file byte access and
// an EXPECT for "throws E whose what() contains every given substring".
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace trinity::model::testing {

// A fresh directory under the system temp dir, removed at destruction.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = (std::filesystem::temp_directory_path() /
             ("trinity_model_io_" + std::to_string(::getpid()) + "_" +
              (info ? std::string(info->test_suite_name()) + "." + info->name() : "x")))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A safetensors file from a header JSON text (unpadded) and a data block.
inline std::string raw_safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// Runs `stmt`, expects exception type E whose message contains every string in `parts`.
#define EXPECT_THROW_MSG(stmt, E, ...)                                                 \
  do {                                                                                 \
    bool thrown_ = false;                                                              \
    try {                                                                              \
      stmt;                                                                            \
    } catch (const E& e_) {                                                            \
      thrown_ = true;                                                                  \
      const std::string what_ = e_.what();                                             \
      for (const std::string& part_ : std::vector<std::string>{__VA_ARGS__})           \
        EXPECT_NE(what_.find(part_), std::string::npos)                                \
            << "message: " << what_ << "\n  lacks: " << part_;                         \
    }                                                                                  \
    EXPECT_TRUE(thrown_) << #stmt " did not throw " #E;                                \
  } while (0)

}  // namespace trinity::model::testing
