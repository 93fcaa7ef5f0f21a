// SFT and DPO datasets (rows from buffer::Taskset::load_rows) -> trainer experiences.
//   SFT messages:  ChatFormatter::encode(messages) with the assistant mask; prompt_length = first
//                  assistant token; action_mask = assistant mask over the rest (multi-turn: user
//                  turns inside the response are masked out).
//   SFT plaintext: with a chat formatter, the row becomes [system?, user: prompt, assistant: response]
//                  and goes through the template as above (Trinity's SFTFormatter); without one
//                  (base model), tokens = encode(prompt) + encode(response) + eos, mask 1 on response+eos.
//   DPO:           Experience{tokens = prompt, prompt_length = |prompt|, chosen, rejected} (Trinity's
//                  layout; the trainer expands it into rows prompt+chosen, prompt+rejected).
// Rows longer than max_model_len have their response(s) cut (truncate_status response_truncated,
// counted); rows whose prompt alone reaches max_model_len, or with no response token, are skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "buffer/config.h"
#include "buffer/dataset.h"
#include "buffer/experience.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace trinity::trainer {

struct SftDataOptions {
  buffer::FormatConfig format;
  int64_t max_model_len = 0;          // 0 = no limit
  std::optional<int32_t> eos_id;      // plaintext without a chat formatter: appended after the response
  bool strict = false;                // a bad row throws ValueError instead of being skipped
};

struct SftDataReport {
  int64_t rows = 0, kept = 0, truncated = 0, skipped = 0;
  std::vector<std::string> problems;  // "where: reason", first 100
};

// `chat` may be null for plaintext rows (then `tok` is used directly); messages rows need it.
std::vector<buffer::Experience> sft_experiences(const std::vector<buffer::RawRow>& rows, const SftDataOptions& opt,
                                                const tok::Tokenizer& tok, const tok::ChatFormatter* chat,
                                                SftDataReport& report);
std::vector<buffer::Experience> dpo_experiences(const std::vector<buffer::RawRow>& rows, const SftDataOptions& opt,
                                                const tok::Tokenizer& tok, const tok::ChatFormatter* chat,
                                                SftDataReport& report);

}  // namespace trinity::trainer
