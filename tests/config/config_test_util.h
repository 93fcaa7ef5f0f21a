// Helpers for the config tests: a temp dir per test holding cfg.yaml, and expecting a ConfigError
// whose message contains every given fragment.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/error.h"

namespace trinity::config::testing {

inline std::string temp_dir() {
  static int n = 0;
  auto d = std::filesystem::temp_directory_path() /
           ("trinity_cfg_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

inline std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string p = dir + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(p).parent_path());
  std::ofstream(p) << text;
  return p;
}

// A complete minimal GRPO config (both mode); `extra` is appended verbatim.
inline std::string base_yaml(const std::string& extra = "") {
  return "checkpoint_root_dir: /tmp/ckpt\n"
         "algorithm:\n  algorithm_type: grpo\n  repeat_times: 8\n  optimizer:\n    lr: 1.0e-5\n"
         "model:\n  model_path: /models/qwen\n  max_response_tokens: 1024\n  max_model_len: 2048\n"
         "buffer:\n  batch_size: 96\n  explorer_input:\n"
         "    taskset: {name: gsm8k, path: /data/gsm8k, format: {prompt_key: question, response_key: answer}}\n"
         "    default_workflow_type: math_workflow\n" +
         extra;
}

inline LoadResult load(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  const std::string dir = temp_dir();
  return load_config(write(dir, "cfg.yaml", yaml), sets);
}

template <typename E = ConfigError>
std::string load_error(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    load(yaml, sets);
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error for:\n" << yaml;
  return "";
}

inline void expect_has(const std::string& msg, const std::vector<std::string>& parts) {
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
}

inline bool has_warning(const LoadResult& r, const std::string& part) {
  for (const auto& w : r.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace trinity::config::testing
