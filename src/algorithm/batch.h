// The token-level arrays an algorithm reads (one micro-batch, padded to T response tokens, row-major
// [B, T]) and the mini-batch normaliser that makes every aggregated loss a true mean over the whole
// mini-batch however it is split into micro-batches:
//   norm = Normalizer::of(mb_1) + ... + Normalizer::of(mb_k)   (counts summed, max_len maxed)
//   loss(mini-batch) = Σ_i loss(mb_i, norm),  dloss/dlogprob(mb_i) = gradient of that sum.
// So the trainer adds micro-batch losses/gradients with weight 1 (no 1/grad_accum factor). Across
// data-parallel ranks, all-reduce the normaliser counts (sum; max for max_len) and sum gradients.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace trinity::algo {

// Which inputs a component reads (bit flags); TokenBatch::validate checks they are present.
enum Need : unsigned {
  kNeedOldLogprob = 1u << 0,
  kNeedRefLogprob = 1u << 1,
  kNeedAdvantages = 1u << 2,
  kNeedEntropy = 1u << 3,
  kNeedExpertMask = 1u << 4,
  kNeedKeepMask = 1u << 5,
};

struct TokenBatch {
  int64_t B = 0;                        // rows (experiences) in this micro-batch
  int64_t T = 0;                        // padded response length
  std::span<const float> logprob;       // [B, T] current policy log p of the sampled token (required)
  std::span<const float> old_logprob;   // [B, T] behaviour (rollout) policy; optional
  std::span<const float> ref_logprob;   // [B, T] reference policy; optional
  std::span<const float> advantages;    // [B, T]; optional
  std::span<const float> entropy;       // [B, T] current policy entropy; optional
  std::span<const float> mask;          // [B, T] action mask, 1 = trained token (required)
  std::span<const uint8_t> is_expert;   // [B] 1 = expert (SFT) row for mix / mix_chord; optional
  std::span<const uint8_t> keep;        // [B, T] 0 = token dropped by a mini-batch-level mask (m2po,
                                        // set by minibatch_actor_loss); optional
  std::span<const float> pg_weight;     // [B, T] rollout-correction importance weights that multiply the
                                        // policy loss's token terms (not KL / entropy); optional
  int64_t train_step = 0;               // the train step (mix_chord's mu schedule)

  size_t at(int64_t b, int64_t t) const { return static_cast<size_t>(b * T + t); }
  bool expert(int64_t b) const { return !is_expert.empty() && is_expert[static_cast<size_t>(b)]; }
  // Throws ShapeError/ValueError naming `who` when a needed array is absent or mis-sized, or when
  // the batch is empty (B == 0 or T == 0).
  void validate(const char* who, unsigned needs) const;
};

// Row subsets that a loss may aggregate over (mix / mix_chord split expert and usual rows).
enum class Rows { kAll, kUsual, kExpert };

struct Normalizer {
  double rows = 0;                            // all rows, masked or not (DPO counts pairs)
  double tokens = 0, seqs = 0;                // Σ mask; rows with at least one masked token
  double usual_tokens = 0, usual_seqs = 0;    // the same over rows with is_expert == 0
  double expert_tokens = 0, expert_seqs = 0;  // ... and is_expert == 1
  double max_len = 0;  // longest response in masked tokens' positions (last masked t + 1);
                       // the trainer may overwrite it with a constant (Dr. GRPO's max length)

  static Normalizer of(const TokenBatch& mb);
  Normalizer& operator+=(const Normalizer& o);
  double n_tokens(Rows r) const;
  double n_seqs(Rows r) const;
};

bool row_in(const TokenBatch& mb, int64_t b, Rows r);
double row_tokens(const TokenBatch& mb, int64_t b);  // Σ_t mask[b, t]

}  // namespace trinity::algo
