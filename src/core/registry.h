// Name -> factory registry, thread-safe, shared by the workflow and reward-function registries (the
// algorithm layer's component tables are immutable and carry argument specs: algorithm/registry.h).
// An unknown name is a ConfigError "[component] unknown <kind> 'x' (did you mean 'y'?); registered:
// ..." (core/names.h). Built-ins are added with add(name, f, /*replace=*/false) so that a test's
// earlier registration of the same name wins.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/names.h"

namespace trinity {

template <class Factory>
class NamedRegistry {
 public:
  NamedRegistry(std::string component, std::string kind) : component_(std::move(component)), kind_(std::move(kind)) {}

  void add(const std::string& name, Factory f, bool replace = true) {
    std::lock_guard<std::mutex> lock(mu_);
    if (replace)
      factories_[name] = std::move(f);
    else
      factories_.emplace(name, std::move(f));
  }
  // A copy of the factory (called outside the lock), or the unknown-name ConfigError.
  Factory get(const std::string& name) const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = factories_.find(name);
      if (it != factories_.end()) return it->second;
    }
    throw_unknown_name(component_, kind_, name, names());
  }
  bool contains(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    return factories_.count(name) != 0;
  }
  std::vector<std::string> names() const {  // sorted
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [n, f] : factories_) out.push_back(n);
    return out;
  }

 private:
  std::string component_, kind_;
  mutable std::mutex mu_;
  std::map<std::string, Factory> factories_;
};

}  // namespace trinity
