// Internal to the data operators (data_ops*.cpp, minhash.cpp): argument parsing whose errors name the
// operator, argument, value and what was expected, shared result helpers, and the factories of
// operators defined outside data_ops.cpp. Only .cpp files include this header (nlohmann/json).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/data_ops.h"

namespace trinity::pipeline {

// The args of one data operator, checked against its accepted argument names on construction.
class OpArgs {
 public:
  OpArgs(std::string op, const std::string& args_json, std::vector<std::string> accepted);

  const std::string& op() const { return op_; }
  bool has(const std::string& key) const;  // present and not null
  const nlohmann::json& at(const std::string& key) const { return a_.at(key); }

  double number(const std::string& key, double def) const;
  // A ratio in [0, 1].
  double ratio(const std::string& key, double def) const;
  // An integer (a float with an integral value is accepted) >= min.
  int64_t integer(const std::string& key, int64_t def, int64_t min) const;
  bool boolean(const std::string& key, bool def) const;
  std::string string(const std::string& key, const std::string& def) const;
  std::vector<std::string> strings(const std::string& key) const;  // a list of texts, [] by default

  // ConfigError "data operator '<op>': <key> must be <expected>, got <value>".
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

 private:
  std::string op_;
  nlohmann::json a_;
};

// keep -> result with filtered_count = #(keep == 0).
DataOpResult filter_result(std::vector<char> keep);

// Operators defined in data_ops_text.cpp and minhash.cpp.
std::unique_ptr<DataOp> make_character_repetition_filter(const OpArgs& a);
std::unique_ptr<DataOp> make_word_repetition_filter(const OpArgs& a);
std::unique_ptr<DataOp> make_special_characters_filter(const OpArgs& a);
std::unique_ptr<DataOp> make_script_ratio_filter(const OpArgs& a);
std::unique_ptr<DataOp> make_minhash_deduplicator(const OpArgs& a);

}  // namespace trinity::pipeline
