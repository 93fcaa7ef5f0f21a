// Sample-strategy descriptors (Trinity-RFT sample_strategy): how the trainer draws a batch from the
// buffer. The algorithm layer only describes them (the buffer/trainer layers act on them):
//   default / warmup (deprecated alias)  train_batch_size experiences from the experience buffer
//   staleness_control   only experiences with model_version ≥ max(step − max_staleness, 0)
//   mix                 ceil(expert_data_ratio·bs) expert rows from auxiliary buffer sft_dataset_name
//                       (marked is_expert, reward/logprobs/advantages 0) plus usual rows
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "algorithm/registry.h"

namespace trinity::algo {

struct SampleStrategy {
  std::string name = "default";
  std::optional<int64_t> max_staleness;  // staleness_control; nullopt = unbounded
  double expert_data_ratio = 0.0;        // mix
  std::string sft_dataset_name;          // mix

  int64_t expert_batch_size(int64_t train_batch_size) const;  // 0 unless mix
  int64_t min_model_version(int64_t train_step) const;        // 0 unless bounded staleness
};

const Registry<SampleStrategy>& sample_strategy_registry();  // kind "sample_strategy"

}  // namespace trinity::algo
