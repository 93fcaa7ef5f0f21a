// Metric merging; see metrics.h.
#include "algorithm/metrics.h"

#include <algorithm>

#include "core/error.h"

namespace trinity::algo {

void Metrics::combine(const std::string& name, Entry e) {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    entries_[name] = e;
    return;
  }
  Entry& cur = it->second;
  switch (e.merge) {
    case Merge::kSum: cur.value += e.value; break;
    case Merge::kLast: cur.value = e.value; break;
    case Merge::kMax: cur.value = std::max(cur.value, e.value); break;
    case Merge::kMin: cur.value = std::min(cur.value, e.value); break;
  }
  cur.merge = e.merge;
}

void Metrics::merge(const Metrics& other, const std::string& prefix) {
  for (const auto& [k, e] : other.entries_) combine(prefix + k, e);
}

double Metrics::get(const std::string& name) const {
  auto it = entries_.find(name);
  TRINITY_ASSERT(it != entries_.end(), "metric '", name, "' not present");
  return it->second.value;
}

}  // namespace trinity::algo
