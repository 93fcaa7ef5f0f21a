// Section reader (section.h): scalar conversions with OmegaConf's per-field coercion (plain text is
// typed by the field it lands in), unknown-key errors with file:line and a did-you-mean hint.
#include "config/section.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/names.h"

namespace trinity::config::detail {

void Ctx::warn(const std::string& msg) {
  if (std::find(warnings.begin(), warnings.end(), msg) == warnings.end()) warnings.push_back(msg);
}

void Ctx::fail(const Tree& at, const std::string& msg) const {
  throw ConfigError("config", strcat(loc(at), ": ", msg));
}

namespace {
[[noreturn]] void type_error(const Ctx& c, const Tree& t, const std::string& path, const char* want) {
  c.fail(t, strcat(path, ": expected ", want, ", got ", t.short_repr()));
}
}  // namespace

int64_t as_i64(const Ctx& c, const Tree& t, const std::string& path) {
  if (!t.is_scalar()) type_error(c, t, path, "an integer");
  const std::string& s = t.scalar;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) {
    // 1e3 / 64.0 written for an integer field: accept exact integral floats.
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0' && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
    type_error(c, t, path, "an integer");
  }
  return v;
}

double as_f64(const Ctx& c, const Tree& t, const std::string& path) {
  if (!t.is_scalar()) type_error(c, t, path, "a number");
  const std::string& s = t.scalar;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v)) type_error(c, t, path, "a number");
  return v;
}

bool as_bool(const Ctx& c, const Tree& t, const std::string& path) {
  if (t.is_scalar()) {
    std::string s = t.scalar;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
  }
  type_error(c, t, path, "true or false");
}

std::string as_str(const Ctx& c, const Tree& t, const std::string& path) {
  if (!t.is_scalar()) type_error(c, t, path, "a string");
  return t.scalar;
}

Section::Section(Ctx& c, const Tree* t, std::string path) : c_(c), t_(t), path_(std::move(path)) {
  if (t_ && t_->is_null()) t_ = nullptr;
  if (t_ && !t_->is_map()) c_.fail(*t_, strcat(path_, ": expected a mapping, got ", t_->short_repr()));
}

const Tree* Section::get(const std::string& k) {
  known_.push_back(k);
  if (!t_) return nullptr;
  const Tree* v = t_->find(k);
  return v && !v->is_null() ? v : nullptr;
}

void Section::str(const std::string& k, std::string& out) {
  if (const Tree* v = get(k)) out = as_str(c_, *v, at(k));
}
void Section::i64(const std::string& k, int64_t& out) {
  if (const Tree* v = get(k)) out = as_i64(c_, *v, at(k));
}
void Section::f64(const std::string& k, double& out) {
  if (const Tree* v = get(k)) out = as_f64(c_, *v, at(k));
}
void Section::boolean(const std::string& k, bool& out) {
  if (const Tree* v = get(k)) out = as_bool(c_, *v, at(k));
}

template <>
void Section::opt<int64_t>(const std::string& k, std::optional<int64_t>& out) {
  if (const Tree* v = get(k)) out = as_i64(c_, *v, at(k));
}
template <>
void Section::opt<double>(const std::string& k, std::optional<double>& out) {
  if (const Tree* v = get(k)) out = as_f64(c_, *v, at(k));
}
template <>
void Section::opt<bool>(const std::string& k, std::optional<bool>& out) {
  if (const Tree* v = get(k)) out = as_bool(c_, *v, at(k));
}
template <>
void Section::opt<std::string>(const std::string& k, std::optional<std::string>& out) {
  if (const Tree* v = get(k)) out = as_str(c_, *v, at(k));
}

void Section::warn_ignored(std::initializer_list<const char*> keys, const std::string& why) {
  for (const char* k : keys)
    if (get(k))
      c_.warn(strcat(c_.loc(*t_->find(k)), ": ", at(k), " has no effect in trinity",
                     why.empty() ? std::string(" (accepted for Trinity-RFT compatibility)") : " (" + why + ")"));
}

void Section::finish() {
  if (!t_) return;
  for (const auto& [k, v] : t_->map) {
    if (std::find(known_.begin(), known_.end(), k) != known_.end()) continue;
    const std::string hint = did_you_mean(k, known_);
    c_.fail(v, strcat("unknown key '", at(k), "'", hint.empty() ? "" : "; " + hint,
                      " (valid keys here: ", join_names(sorted_unique(known_)), ")"));
  }
}

std::string resolve_path(const std::string& path, const std::string& dir, bool must_exist) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::path(path).is_absolute() || dir.empty()) return path;
  const fs::path joined = fs::path(dir) / path;
  if (must_exist && !fs::exists(joined)) return path;
  return joined.lexically_normal().string();
}

}  // namespace trinity::config::detail
