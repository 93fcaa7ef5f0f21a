// The typed field reader for JSON objects (buffer storage/taskset configs, reward_fn_args, debug
// inputs): each read marks its key as known; finish() reports any other key as an UnknownKeyError
// with its dotted path, a did-you-mean and the valid keys (core/names.h), or collects the paths into
// *unknown when given. Wrong types throw ConfigError "[component] <path>.<key>: expected <type>, got
// <value>". The YAML config layer (config/section.h) reads its tree with the same rules and the same
// names.h messages. Includes nlohmann/json: include from .cpp files only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/names.h"

namespace trinity {

class JsonFields {
 public:
  using json = nlohmann::json;
  // `j` must be an object (else ConfigError naming `path`); it must outlive this reader.
  JsonFields(const json& j, std::string path, std::string component = "config",
             std::vector<std::string>* unknown = nullptr)
      : j_(j), path_(std::move(path)), component_(std::move(component)), unknown_(unknown) {
    if (!j_.is_object()) throw KeyError(component_, path_, strcat("expected a mapping, got ", j_.dump()));
  }
  std::string at(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }

  // Marks `k` known; the value, or null when absent or JSON null.
  const json* get(const std::string& k) {
    if (std::find(valid_.begin(), valid_.end(), k) == valid_.end()) valid_.push_back(k);
    auto it = j_.find(k);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  void str(const std::string& k, std::string& out) {
    if (const json* v = get(k)) out = as_str(k, *v);
  }
  void opt_str(const std::string& k, std::optional<std::string>& out) {
    if (const json* v = get(k)) out = as_str(k, *v);
  }
  void i64(const std::string& k, int64_t& out) {
    if (const json* v = get(k)) out = as_i64(k, *v);
  }
  void opt_i64(const std::string& k, std::optional<int64_t>& out) {
    if (const json* v = get(k)) out = as_i64(k, *v);
  }
  void f64(const std::string& k, double& out) {
    if (const json* v = get(k)) out = as_f64(k, *v);
  }
  void opt_f64(const std::string& k, std::optional<double>& out) {
    if (const json* v = get(k)) out = as_f64(k, *v);
  }
  void boolean(const std::string& k, bool& out) {
    if (const json* v = get(k)) out = as_bool(k, *v);
  }
  void opt_bool(const std::string& k, std::optional<bool>& out) {
    if (const json* v = get(k)) out = as_bool(k, *v);
  }
  // A mapping kept as its JSON text.
  void object_text(const std::string& k, std::string& out) {
    if (const json* v = get(k)) {
      if (!v->is_object()) throw type_error(k, "a mapping", *v);
      out = v->dump();
    }
  }
  void str_list(const std::string& k, std::vector<std::string>& out) {
    if (const json* v = get(k)) {
      if (!v->is_array()) throw type_error(k, "a list of strings", *v);
      out.clear();
      for (const auto& x : *v) {
        if (!x.is_string()) throw type_error(k, "a list of strings", *v);
        out.push_back(x.get<std::string>());
      }
    }
  }
  // Known upstream keys without meaning here: accepted, one warning each.
  void ignore(const std::string& k) {
    if (get(k))
      log::warn(component_, ": ", at(k), " has no effect in trinity (accepted for Trinity-RFT compatibility)");
  }
  // Every key not read so far is unknown.
  void finish() {
    for (const auto& [k, v] : j_.items()) {
      if (std::find(valid_.begin(), valid_.end(), k) != valid_.end()) continue;
      if (unknown_) {
        unknown_->push_back(at(k));
        continue;
      }
      throw UnknownKeyError(component_, at(k), valid_);
    }
  }
  // "[component] <path>.<k>: <msg>" as a KeyError (the path travels as data).
  KeyError error(const std::string& k, const std::string& msg) const { return KeyError(component_, at(k), msg); }
  KeyError type_error(const std::string& k, const char* want, const json& got) const {
    return error(k, strcat("expected ", want, ", got ", got.dump()));
  }

 private:
  std::string as_str(const std::string& k, const json& v) const {
    if (!v.is_string()) throw type_error(k, "a string", v);
    return v.get<std::string>();
  }
  int64_t as_i64(const std::string& k, const json& v) const {
    if (!v.is_number_integer()) throw type_error(k, "an integer", v);
    return v.get<int64_t>();
  }
  double as_f64(const std::string& k, const json& v) const {
    if (!v.is_number()) throw type_error(k, "a number", v);
    return v.get<double>();
  }
  bool as_bool(const std::string& k, const json& v) const {
    if (!v.is_boolean()) throw type_error(k, "true or false", v);
    return v.get<bool>();
  }

  const json& j_;
  std::string path_, component_;
  std::vector<std::string>* unknown_;
  std::vector<std::string> valid_;
};

}  // namespace trinity
