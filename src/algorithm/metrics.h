// Named scalar metrics with a merge rule, so that metrics of micro-batches combine into the metrics
// of the mini-batch: kSum values are already divided by the mini-batch normaliser (see batch.h) and
// add up; kLast values (coefficients, schedule values) are the same for every micro-batch; kMax/kMin
// combine by max/min. Names follow Trinity-RFT's (`pg_clipfrac`, `ppo_kl`, ...).
#pragma once

#include <map>
#include <string>

namespace trinity::algo {

enum class Merge { kSum, kLast, kMax, kMin };

class Metrics {
 public:
  struct Entry {
    double value = 0.0;
    Merge merge = Merge::kSum;
  };
  void add(const std::string& name, double v) { combine(name, {v, Merge::kSum}); }  // additive
  void set(const std::string& name, double v) { entries_[name] = {v, Merge::kLast}; }
  void max(const std::string& name, double v) { combine(name, {v, Merge::kMax}); }
  void min(const std::string& name, double v) { combine(name, {v, Merge::kMin}); }
  void merge(const Metrics& other, const std::string& prefix = "");
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  double get(const std::string& name) const;  // asserts presence
  const std::map<std::string, Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  void combine(const std::string& name, Entry e);
  std::map<std::string, Entry> entries_;
};

}  // namespace trinity::algo
