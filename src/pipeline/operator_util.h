// Internal helpers of the experience operators (operators.cpp and the operator files beside it):
// argument parsing with errors that name the operator, argument and value, and the factories of
// operators defined in their own files. Only pipeline .cpp files include this header (nlohmann/json).
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/names.h"
#include "pipeline/operators.h"

namespace trinity::pipeline {

using json = nlohmann::json;

// The operator's args as a JSON object whose keys are all in `allowed`.
inline json parse_args(const OperatorConfig& cfg, const std::vector<std::string>& allowed) {
  json a;
  try {
    a = json::parse(cfg.args.empty() ? "{}" : cfg.args);
  } catch (const json::exception& e) {
    throw ConfigError("pipeline", strcat("experience operator '", cfg.name, "': args are not valid JSON: ", e.what()));
  }
  if (a.is_null()) a = json::object();
  if (!a.is_object())
    throw ConfigError("pipeline",
                      strcat("experience operator '", cfg.name, "': args must be a mapping, got ", a.dump()));
  for (const auto& [k, v] : a.items())
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      throw ConfigError("pipeline", strcat("experience operator '", cfg.name, "': unknown argument '", k, "'",
                                           did_you_mean_suffix(k, allowed), "; accepted: ", join_names(allowed)));
  return a;
}

inline double number_arg(const OperatorConfig& cfg, const json& a, const std::string& key, double def) {
  if (!a.contains(key) || a[key].is_null()) return def;
  if (!a[key].is_number())
    throw ConfigError("pipeline",
                      strcat("experience operator '", cfg.name, "': ", key, " must be a number, got ", a[key].dump()));
  return a[key].get<double>();
}

std::unique_ptr<ExperienceOperator> make_pass_rate_calculator(const OperatorConfig& cfg);

}  // namespace trinity::pipeline
