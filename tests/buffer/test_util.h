// Helpers for buffer tests: experiences with every field filled, temp directories.
#pragma once

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "buffer/experience.h"
#include "core/error.h"

namespace trinity::buffer::testing {

// A fully populated experience; `i` varies every field. Reward absent when pending.
inline Experience make_exp(int64_t i, int64_t n_tokens = 12, bool pending = false, int64_t version = 0) {
  Experience e;
  e.eid.batch = std::to_string(i / 8);
  e.eid.task = i % 8;
  e.eid.run = i % 3;
  e.eid.step = i % 2;
  e.eid.suffix = random_suffix();
  const int64_t p = n_tokens / 3;
  e.prompt_length = p;
  for (int64_t t = 0; t < n_tokens; ++t) e.tokens.push_back(static_cast<int32_t>((i * 131 + t * 7) % 151000));
  const int64_t r = n_tokens - p;
  for (int64_t t = 0; t < r; ++t) {
    e.logprobs.push_back(-0.1f * static_cast<float>(t + 1) - 1e-7f * static_cast<float>(i));
    e.action_mask.push_back(static_cast<uint8_t>(t % 5 != 4));
    e.advantages.push_back(0.25f * static_cast<float>(i % 7) - 0.3f);
    e.returns.push_back(1.0f / 3.0f);
    e.token_rewards.push_back(t + 1 == r ? 1.0f : 0.0f);
    e.teacher_logprobs.push_back(-0.05f * static_cast<float>(t));
  }
  if (!pending) e.reward = 0.5 * static_cast<double>(i % 5) - 0.1;
  e.model_version = version;
  e.truncate_status = i % 4 == 1 ? TruncateStatus::kResponseTruncated : TruncateStatus::kNone;
  // Canonical JSON text (sorted keys, as stored): free-form fields round-trip byte for byte.
  e.info = "{\"note\":\"h\u00e9\",\"task_index\":{\"index\":" + std::to_string(i) + ",\"taskset_id\":0}}";
  e.metrics["length"] = static_cast<double>(n_tokens);
  e.metrics["acc"] = 1.0 / 7.0;
  e.prompt_text = "What is " + std::to_string(i) + "+1?\n\"quoted\"";
  e.response_text = std::to_string(i + 1);
  e.messages = "[{\"content\":\"hi\",\"role\":\"user\"}]";
  if (i % 6 == 5) {
    e.chosen = {1, 2, 3};
    e.rejected = {4, 5};
    e.chosen_messages = "[{\"content\":\"a\",\"role\":\"assistant\"}]";
    e.rejected_messages = "[{\"content\":\"b\",\"role\":\"assistant\"}]";
  }
  return e;
}

inline std::string temp_dir(const std::string& tag) {
  const std::string d = (std::filesystem::temp_directory_path() /
                         ("trinity_buffer_" + tag + "_" + std::to_string(::getpid()) + "_" + random_suffix())).string();
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace trinity::buffer::testing
