// MinHash + LSH near-duplicate removal (document_minhash_deduplicator, data_ops.h), after Data-Juicer's
// operator and datasketch's MinHashLSH. A row's shingles are its n-grams of whitespace-split words
// (the whole word sequence when it has fewer than n words); each shingle's 64-bit hash h is permuted
// by num_permutations universal hashes (a_i h + b_i) mod (2^61 - 1), truncated to 32 bits as
// Data-Juicer does, and the signature keeps the minima. Rows sharing all rows_per_band slots of any
// band are candidates; a candidate pair is merged (union-find) only when its estimated Jaccard (the
// fraction of equal signature slots) is >= jaccard_threshold; each cluster keeps its lowest row.
// A pair of Jaccard s becomes a candidate with probability 1 - (1 - s^r)^b: with the defaults
// (threshold 0.7, 128 permutations -> b = 14, r = 9) a pair at s = 0.84 (one word changed in the middle
// of 60 words) is found ~95 % of the time; more bands (or a lower threshold) raise that.
#pragma once

#include <cstdint>

namespace trinity::pipeline {

struct LshParams {
  int64_t bands = 0, rows = 0;  // bands * rows <= num_perm
  bool operator==(const LshParams&) const = default;
};

// datasketch's _optimal_param: the (b, r) with b * r <= num_perm minimising
// fp_weight * integral_0^t (1 - (1 - s^r)^b) ds + fn_weight * integral_t^1 (1 - s^r)^b ds,
// b ascending then r ascending, the first minimum winning. Integrals by composite Simpson.
LshParams optimal_lsh_params(double threshold, int64_t num_perm, double fp_weight = 0.5, double fn_weight = 0.5);

}  // namespace trinity::pipeline
