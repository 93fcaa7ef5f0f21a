// Experiences -> the padded token arrays the algorithm reads (explorer-side advantages and the
// trainer share it). Row b of the batch is one sequence (a DPO experience gives two rows: 2k =
// prompt + chosen, 2k+1 = prompt + rejected, the layout the dpo loss reads). The trainer packs rows
// into a model batch (trainer/packed_batch.h) whose logprob/entropy outputs, in row order, are
// exactly the response tokens of rows b0, b0+1, ... ("packed per-response-token" vectors, [Σ R_b]).
// The algorithm reads padded row-major [B, T] arrays, T = longest response; scatter/gather convert.
// Invariant: every row has prompt_length >= 1 (the first response token must be predicted).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "buffer/experience.h"

namespace trinity::pipeline {

struct ExperienceBatch {
  int64_t B = 0, T = 0;                       // rows, padded response length
  std::vector<std::vector<int32_t>> seqs;     // [B][L_b] prompt + response tokens
  std::vector<int64_t> prompt_len, resp_len;  // [B]
  std::vector<int64_t> resp_offset;           // [B+1] row b's start in a packed response vector
  std::vector<int64_t> source;                // [B] index of the experience row b came from
  // [B, T], zero padded. old_logprob/mask always present; the others empty unless every
  // (non-DPO) experience has them.
  std::vector<float> old_logprob, mask, advantages, returns, token_rewards, teacher_logprob;
  std::vector<float> rewards;              // [B] (pending reward -> 0)
  std::vector<std::string> group, run;     // [B] eid.tid(), eid.rid()
  std::vector<int64_t> run_step, lengths;  // [B] eid.step, response length
  std::vector<int64_t> model_version;      // [B]
  std::vector<uint8_t> is_expert;          // [B] info.is_expert (mix / mix_chord)
  std::vector<std::string> anchor;         // [B] info.anchor (GiGPO); empty unless every row has one
  std::vector<float> reward_baseline;      // [B] info.reward_baseline (ReMax); empty unless every row has one
  bool dpo = false;
  bool has_old_logprob = false;  // every (non-DPO) experience has rollout logprobs

  size_t at(int64_t b, int64_t t) const { return static_cast<size_t>(b * T + t); }
  int64_t tokens(int64_t b0, int64_t b1) const;  // Σ L_b over rows [b0, b1)
  // The part of row b's prompt that rows with the same prompt can share: all but its last token
  // (whose row predicts the first response token, so differs per row); empty for a 1-token prompt.
  std::span<const int32_t> shared_prompt(int64_t b) const;
  // Packed per-response-token values of rows [b0, b1) ([Σ R_b]) -> [(b1-b0), T] (zero padded).
  std::vector<float> scatter(const std::vector<float>& packed_vals, int64_t b0, int64_t b1) const;
  // [(b1-b0), T] -> packed [Σ R_b] of rows [b0, b1).
  std::vector<float> gather(const float* padded, int64_t b0, int64_t b1) const;
};

// Builds the batch. DPO experiences (chosen + rejected set) become two rows each; mixing DPO and
// non-DPO experiences is a ValueError, as is an array whose length is not the response length.
ExperienceBatch make_batch(const std::vector<buffer::Experience>& exps);

// Contiguous row ranges [b0, b1) in order: greedily up to `max_tokens` tokens per range when
// max_tokens > 0 (a row, or DPO pair, longer than that is a ValueError naming it: as upstream, each
// sequence must fit in one micro-batch), else `max_rows` rows (<= 0: one range). `pair` keeps
// ranges even-sized (DPO pairs stay together). Only rows [lo, hi) are split (hi < 0: to eb.B); an
// empty window gives no range. With share_prompts a row whose shared_prompt() an earlier row of
// the range has too counts only its other tokens (the trainer computes that prompt once: see
// trainer/packed_batch.h), so the budget bounds the rows the model really computes.
std::vector<std::pair<int64_t, int64_t>> micro_ranges(const ExperienceBatch& eb, int64_t max_tokens, int64_t max_rows,
                                                      bool pair = false, int64_t lo = 0, int64_t hi = -1,
                                                      bool share_prompts = false);

// Rows of a [B, T] array selected by `rows` (indices into B), -> [rows.size(), T].
std::vector<float> select_rows(const std::vector<float>& padded, int64_t T, const std::vector<int64_t>& rows);

}  // namespace trinity::pipeline
