// Component argument merging and typed access; see args.h.
#include "algorithm/args.h"

#include <cmath>
#include <sstream>

#include "core/error.h"

namespace trinity::algo {

std::string ArgValue::type_name() const {
  switch (v.index()) {
    case 0: return "null";
    case 1: return "bool";
    case 2: return "int";
    case 3: return "float";
    default: return "string";
  }
}

std::string ArgValue::repr() const {
  switch (v.index()) {
    case 0: return "null";
    case 1: return std::get<bool>(v) ? "true" : "false";
    case 2: return std::to_string(std::get<int64_t>(v));
    case 3: {
      std::ostringstream os;
      os << std::get<double>(v);
      return os.str();
    }
    default: return "\"" + std::get<std::string>(v) + "\"";
  }
}

Args Args::resolve(const std::string& where, const ArgSpec& spec, const ArgMap& user) {
  Args a;
  a.where_ = where;
  for (const auto& d : spec) a.values_[d.name] = d.def;
  for (const auto& [k, val] : user) {
    if (!a.values_.count(k)) {
      std::vector<std::string> valid;
      for (const auto& d : spec) valid.push_back(d.name);
      throw ConfigError("algorithm", strcat(where, ": unknown argument '", k, "'", did_you_mean_suffix(k, valid),
                                            "; valid arguments are: ", join_names(valid)));
    }
    a.values_[k] = val;
  }
  return a;
}

const ArgValue& Args::get(const std::string& key) const {
  auto it = values_.find(key);
  TRINITY_ASSERT(it != values_.end(), "argument '", key, "' not declared in ", where_);
  return it->second;
}

void Args::type_error(const std::string& key, const char* expected) const {
  throw ConfigError("algorithm", strcat(where_, ": argument '", key, "' must be ", expected, ", got ",
                                        get(key).type_name(), " ", get(key).repr()));
}

bool Args::has_value(const std::string& key) const {
  auto it = values_.find(key);
  return it != values_.end() && !it->second.is_null();
}

double Args::f64(const std::string& key) const {
  auto o = opt_f64(key);
  if (!o) type_error(key, "a number");
  return *o;
}

std::optional<double> Args::opt_f64(const std::string& key) const {
  const auto& v = get(key).v;
  if (std::holds_alternative<std::monostate>(v)) return std::nullopt;
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  type_error(key, "a number");
}

int64_t Args::i64(const std::string& key) const {
  const auto& v = get(key).v;
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v); d && std::floor(*d) == *d) return static_cast<int64_t>(*d);
  type_error(key, "an integer");
}

bool Args::boolean(const std::string& key) const {
  const auto& v = get(key).v;
  if (auto* b = std::get_if<bool>(&v)) return *b;
  type_error(key, "true or false");
}

std::string Args::str(const std::string& key) const {
  auto o = opt_str(key);
  if (!o) type_error(key, "a string");
  return *o;
}

std::optional<std::string> Args::opt_str(const std::string& key) const {
  const auto& v = get(key).v;
  if (std::holds_alternative<std::monostate>(v)) return std::nullopt;
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  type_error(key, "a string");
}

std::string Args::choice(const std::string& key, const std::vector<std::string>& choices) const {
  const std::string s = str(key);
  for (const auto& c : choices)
    if (c == s) return s;
  throw ConfigError("algorithm", strcat(where_, ": argument '", key, "' is \"", s,
                                        "\"; valid values are: ", join_names(choices)));
}

}  // namespace trinity::algo
