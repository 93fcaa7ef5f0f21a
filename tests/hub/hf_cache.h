// Test helper: writes one repo into a Hub cache folder exactly as huggingface_hub lays it out
// (blobs/<etag>, snapshots/<commit>/<path> -> relative symlinks ../../blobs/<etag>, refs/<revision>),
// so the tests can check that trinity uses a cache filled by the Python libraries as is.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "core/sha256.h"

namespace trinity::test {

// files: repo path -> content. LFS-like files (.safetensors, .parquet) get their sha256 as etag,
// others a 40-hex stand-in for the git blob sha1 (huggingface_hub never re-checks those).
inline void write_hf_cache(const std::string& cache, const std::string& folder, const std::string& revision,
                           const std::string& commit, const std::map<std::string, std::string>& files) {
  namespace fs = std::filesystem;
  const fs::path repo = fs::path(cache) / folder;
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / revision) << commit;  // no newline, as huggingface_hub writes it
  for (const auto& [path, content] : files) {
    const bool lfs = path.ends_with(".safetensors") || path.ends_with(".parquet");
    const std::string etag = lfs ? sha256_hex(content) : sha256_hex("blob:" + content).substr(0, 40);
    std::ofstream(repo / "blobs" / etag, std::ios::binary) << content;
    const fs::path link = repo / "snapshots" / commit / path;
    fs::create_directories(link.parent_path());
    fs::create_symlink((repo / "blobs" / etag).lexically_relative(link.parent_path()), link);
  }
}

}  // namespace trinity::test
