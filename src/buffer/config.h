// Plain config structs of the buffer layer with Trinity-RFT's key names and defaults
// (trinity-rft.md §2.5): experience buffers (StorageConfig), tasksets (TasksetConfig), formats,
// selectors and replay. The YAML config layer fills them through config_json.h; code may also build
// them directly. Keys marked "trinity extension" do not exist upstream.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "buffer/experience.h"

namespace trinity::buffer {

struct FormatConfig {
  std::string prompt_type = "messages";  // messages | plaintext (SFT/DPO)
  std::string prompt_key = "prompt";
  std::string response_key = "response";
  std::string system_prompt_key;  // "" = none
  std::string system_prompt;
  std::string reply_prefix;
  std::string messages_key = "message";
  std::string tools_key = "tools";
  std::string image_key, video_key;
  std::string workflow_key, reward_fn_key;
  std::string chosen_key = "chosen";
  std::string rejected_key = "rejected";
  bool enable_concatenated_multi_turn = false;
  std::string chat_template;
  std::optional<bool> enable_thinking;
  bool operator==(const FormatConfig&) const = default;
};

struct SelectorConfig {
  std::string selector_type = "sequential";  // sequential | shuffle | random | offline_easy2hard
  int64_t seed = 42;
  std::vector<std::string> feature_keys;
  std::string kwargs = "{}";  // JSON object text
  bool operator==(const SelectorConfig&) const = default;
};

struct ReplayConfig {
  bool enable = false;
  std::string priority_fn = "linear_decay";  // linear_decay | decay_limit_randomization
  std::optional<double> reuse_cooldown_time;  // seconds; none = never reuse
  double decay = 2.0;                         // priority_fn_args.decay
  int64_t use_count_limit = 3;                // priority_fn_args.use_count_limit (<= 0 unlimited)
  double sigma = 0.0;                         // priority_fn_args.sigma
  bool operator==(const ReplayConfig&) const = default;
};

// trainer_input.experience_buffer / auxiliary buffers (Trinity ExperienceBufferConfig).
struct StorageConfig {
  std::string name = "experience_buffer";
  std::string storage_type = "queue";  // queue | sql (alias sqlite) | file
  std::string path;                    // sqlite file or sqlite:/// URL; jsonl; queue: backup mirror
  int64_t capacity = 10000;            // queue capacity in experiences
  double max_read_timeout = 1800.0;    // seconds
  ReplayConfig replay_buffer;
  int64_t max_retry_times = 3;
  double max_retry_interval = 1.0;
  std::string schema_type = "experience";  // experience | sft | dpo (auto from the algorithm)
  int64_t batch_size = 0;                  // auto: train_batch_size
  std::string split = "train", subset_name;
  FormatConfig format;
  bool enable_progress_bar = false;
  SelectorConfig data_selector;
  double lease_timeout = 600.0;  // trinity extension: seconds a read batch stays leased before given back
  std::string reader_id;         // trinity extension: lease owner name for resume ("" = name)
  bool operator==(const StorageConfig&) const = default;
};

// explorer_input.taskset / tasksets[] / eval_tasksets[] (Trinity TasksetConfig).
struct TasksetConfig {
  std::string name;                   // auto taskset_i / eval_taskset_i
  std::string storage_type = "file";  // file (sql tasksets are not supported yet)
  std::string path;
  std::string subset_name;
  std::string split = "train";
  FormatConfig format;
  RolloutArgs rollout_args;
  std::string workflow_args = "{}", reward_fn_args = "{}";  // JSON object text
  std::string default_workflow_type, default_reward_fn_type;
  SelectorConfig data_selector;
  int64_t repeat_times = 1;
  bool enable_progress_bar = false;
  int64_t max_retry_times = 3;
  double max_retry_interval = 1.0;
  // auto-filled by the config layer
  int64_t index = 0;
  bool is_eval = false;
  int64_t batch_size = 1;
  int64_t total_epochs = 1;
  std::optional<int64_t> total_steps;
  bool strict = false;  // trinity extension: a bad row is an error instead of skipped and counted
  // Set by the explorer from the workflow (workflow::workflow_reads_prompt): false for workflows that
  // read their own fields of the row (frozen_lake_workflow: seed / size / p), whose rows need no prompt.
  bool prompt_required = true;
  bool operator==(const TasksetConfig&) const = default;
};

}  // namespace trinity::buffer
