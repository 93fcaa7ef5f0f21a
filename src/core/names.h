// Names the user typed that must match a known set (config keys, registry names, CLI flags): edit
// distance, the "did you mean" suggestion, the "a, b, c" list, and UnknownKeyError, which carries the
// key, its dotted path and the valid keys as data so that a caller can re-locate it (file:line)
// without parsing message text. One rule for every suggestion: the closest candidate within
// max(2, |key| / 3) edits.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"

namespace trinity {

// Levenshtein distance (insert / delete / substitute, each 1).
size_t edit_distance(const std::string& a, const std::string& b);
// The candidate closest to `key`, or "" when none is within max(2, |key| / 3) edits.
std::string closest_name(const std::string& key, const std::vector<std::string>& candidates);
// " (did you mean 'x'?)" or "".
std::string did_you_mean_suffix(const std::string& key, const std::vector<std::string>& candidates);
// "a, b, c" in the given order, or "(none)".
std::string join_names(const std::vector<std::string>& names);
// Sorted, duplicates dropped.
std::vector<std::string> sorted_unique(std::vector<std::string> v);

// A ConfigError about one key: "[component] <path>: <msg>", with the dotted path (e.g.
// "buffer.explorer_input.taskset.capacity") as data, so a caller can re-locate it (file:line).
class KeyError : public ConfigError {
 public:
  KeyError(const std::string& component, std::string path, const std::string& msg)
      : ConfigError(component, path + ": " + msg), path_(std::move(path)), msg_(msg) {}
  const std::string& path() const { return path_; }
  const std::string& detail() const { return msg_; }  // the message without "[component] <path>: "

 protected:
  struct Raw {};
  KeyError(Raw, const std::string& component, std::string path, const std::string& message)
      : ConfigError(component, message), path_(std::move(path)), msg_(message) {}

 private:
  std::string path_, msg_;
};

// "[component] unknown key 'path' (did you mean 'x'?); valid keys here: a, b".
class UnknownKeyError : public KeyError {
 public:
  UnknownKeyError(const std::string& component, std::string path, std::vector<std::string> valid);
  std::string key() const;  // last component of path()
  const std::vector<std::string>& valid() const { return valid_; }

 private:
  std::vector<std::string> valid_;
};

// "[component] unknown <kind> 'name' (did you mean 'x'?); registered: a, b" as a ConfigError.
[[noreturn]] void throw_unknown_name(const std::string& component, const std::string& kind, const std::string& name,
                                     const std::vector<std::string>& names);

}  // namespace trinity
