// Name -> factory registries for algorithm components (advantage_fn, policy_loss_fn, kl fns,
// entropy_loss_fn, sample_strategy). Each entry declares its arguments (ArgSpec with defaults) and a
// one-line doc; make() merges the user's `*_args` over the defaults and builds the component. An
// unknown name or argument is a ConfigError listing the valid ones. Registries are immutable tables
// built on first use; adding a component means adding one entry (docs/adding-an-algorithm.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithm/args.h"
#include "core/error.h"

namespace trinity::algo {

template <class T>
struct RegistryEntry {
  std::string name;
  std::string doc;  // formula / paper, one line
  ArgSpec args;
  std::function<std::unique_ptr<T>(const Args&)> make;
};

template <class T>
class Registry {
 public:
  Registry(std::string kind, std::vector<RegistryEntry<T>> entries)
      : kind_(std::move(kind)), entries_(std::move(entries)) {}

  const RegistryEntry<T>& entry(const std::string& name) const {
    for (const auto& e : entries_)
      if (e.name == name) return e;
    throw ConfigError("algorithm", strcat(kind_, " \"", name, "\" is unknown", did_you_mean_suffix(name, names()),
                                          "; valid names are: ", join_names(names())));
  }
  bool contains(const std::string& name) const {
    for (const auto& e : entries_)
      if (e.name == name) return true;
    return false;
  }
  // Resolves `user` args against the entry's spec (unknown key -> ConfigError) and builds it.
  std::unique_ptr<T> make(const std::string& name, const ArgMap& user) const {
    const auto& e = entry(name);
    return e.make(Args::resolve(strcat(kind_, "_args of ", name), e.args, user));
  }
  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const auto& e : entries_) n.push_back(e.name);
    return n;
  }
  const std::vector<RegistryEntry<T>>& entries() const { return entries_; }
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::vector<RegistryEntry<T>> entries_;
};

}  // namespace trinity::algo
