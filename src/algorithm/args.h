// Component arguments (`advantage_fn_args`, `policy_loss_fn_args`, ...): a small JSON-like scalar
// value type and a checked name->value map. Kept free of YAML/JSON libraries so that the config layer
// (YAML) and `trinity debug loss` (JSON) both convert into it. Every component declares an ArgSpec
// (names, defaults, one-line docs); user args are merged over the defaults key by key, and an unknown
// key is a ConfigError that lists the valid ones.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/names.h"

namespace trinity::algo {

// null | bool | integer | float | string. Integers convert to float on request; nothing else converts.
struct ArgValue {
  std::variant<std::monostate, bool, int64_t, double, std::string> v;

  ArgValue() = default;
  ArgValue(std::nullptr_t) {}
  ArgValue(bool b) : v(b) {}
  ArgValue(int i) : v(int64_t{i}) {}
  ArgValue(int64_t i) : v(i) {}
  ArgValue(double d) : v(d) {}
  ArgValue(const char* s) : v(std::string(s)) {}
  ArgValue(std::string s) : v(std::move(s)) {}

  bool is_null() const { return std::holds_alternative<std::monostate>(v); }
  std::string type_name() const;  // "null", "bool", "int", "float", "string"
  std::string repr() const;       // JSON-ish rendering for messages and docs
  bool operator==(const ArgValue&) const = default;
};

using ArgMap = std::map<std::string, ArgValue>;

// One declared argument of a component.
struct ArgDef {
  std::string name;
  ArgValue def;     // default; null means "unset" (the component decides what that means)
  std::string doc;  // one line
};
using ArgSpec = std::vector<ArgDef>;

// The resolved arguments of one component: every declared key is present (user value or default).
class Args {
 public:
  Args() = default;
  // Merges `user` over the defaults of `spec`. Throws ConfigError("algorithm", ...) naming
  // `where` (e.g. "policy_loss_fn_args of ppo") for an unknown key, listing the valid keys.
  static Args resolve(const std::string& where, const ArgSpec& spec, const ArgMap& user);

  bool has_value(const std::string& key) const;  // declared and not null
  double f64(const std::string& key) const;
  std::optional<double> opt_f64(const std::string& key) const;  // null -> nullopt
  int64_t i64(const std::string& key) const;
  bool boolean(const std::string& key) const;
  std::string str(const std::string& key) const;
  std::optional<std::string> opt_str(const std::string& key) const;
  // String that must be one of `choices` (case-sensitive); the error lists them.
  std::string choice(const std::string& key, const std::vector<std::string>& choices) const;
  const ArgMap& values() const { return values_; }
  const std::string& where() const { return where_; }

 private:
  const ArgValue& get(const std::string& key) const;
  [[noreturn]] void type_error(const std::string& key, const char* expected) const;
  std::string where_;
  ArgMap values_;
};

// "a, b, c" — used by every "valid ones are ..." message (core/names.h).
using trinity::join_names;

}  // namespace trinity::algo
