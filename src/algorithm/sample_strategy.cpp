// Sample-strategy descriptors; see sample_strategy.h.
#include "algorithm/sample_strategy.h"

#include <algorithm>
#include <cmath>

namespace trinity::algo {

int64_t SampleStrategy::expert_batch_size(int64_t train_batch_size) const {
  if (name != "mix") return 0;
  return static_cast<int64_t>(std::ceil(expert_data_ratio * static_cast<double>(train_batch_size)));
}

int64_t SampleStrategy::min_model_version(int64_t train_step) const {
  if (!max_staleness) return 0;
  return std::max<int64_t>(train_step - *max_staleness, 0);
}

const Registry<SampleStrategy>& sample_strategy_registry() {
  static const Registry<SampleStrategy> reg = [] {
    auto plain = [](const char* name) {
      return [name](const Args&) {
        auto s = std::make_unique<SampleStrategy>();
        s->name = name;
        return s;
      };
    };
    std::vector<RegistryEntry<SampleStrategy>> e;
    e.push_back({"default", "train_batch_size experiences from the experience buffer", {}, plain("default")});
    e.push_back({"warmup", "deprecated alias of default", {}, plain("default")});
    e.push_back({"staleness_control", "skip experiences older than step − max_staleness",
                 {{"max_staleness", nullptr, "largest allowed version lag (null = unbounded)"}},
                 [](const Args& a) {
                   auto s = std::make_unique<SampleStrategy>();
                   s->name = "staleness_control";
                   if (a.has_value("max_staleness")) {
                     s->max_staleness = a.i64("max_staleness");
                     if (*s->max_staleness < 0)
                       throw ConfigError("algorithm", strcat(a.where(), ": max_staleness must be >= 0"));
                   }
                   return s;
                 }});
    e.push_back({"mix", "expert (SFT) rows mixed with rollout rows",
                 {{"expert_data_ratio", 0.5, "fraction of expert rows"},
                  {"sft_dataset_name", "sft_dataset", "auxiliary buffer holding expert data"}},
                 [](const Args& a) {
                   auto s = std::make_unique<SampleStrategy>();
                   s->name = "mix";
                   s->expert_data_ratio = a.f64("expert_data_ratio");
                   s->sft_dataset_name = a.str("sft_dataset_name");
                   if (s->expert_data_ratio < 0 || s->expert_data_ratio > 1)
                     throw ConfigError("algorithm", strcat(a.where(), ": expert_data_ratio must be in [0, 1]"));
                   return s;
                 }});
    return Registry<SampleStrategy>("sample_strategy", std::move(e));
  }();
  return reg;
}

}  // namespace trinity::algo
