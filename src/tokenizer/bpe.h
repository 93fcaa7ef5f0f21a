// Byte-level BPE model (internal). Works on raw bytes: vocab keys are stored as the bytes their
// byte-level strings stand for, so a word is encoded without mapping it to the GPT-2 alphabet.
// Merge order: repeatedly merge the adjacent pair with the lowest merge rank, leftmost first on
// ties (the rule of HF tokenizers' BPE::merge_word). Results for words < 256 bytes are cached.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace trinity::tok {

// Hash for string-keyed maps that can be probed with a string_view (no key copy per lookup).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using ByteVocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeMerge {
  int32_t rank;
  int32_t new_id;
};

class BpeModel {
 public:
  // `vocab`: raw-byte token -> id. `merges`: (left, right) raw-byte tokens in rank order.
  // Throws ConfigError naming a merge whose parts or result are missing from the vocab.
  BpeModel(ByteVocab vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
           int32_t unk_id);

  // Appends the ids of one pre-tokenized piece (raw bytes).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  const ByteVocab& vocab() const { return vocab_; }

 private:
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  ByteVocab vocab_;
  // Open-addressing (key -> merge) table, power-of-two sized; kEmpty marks a free slot.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  const BpeMerge* find_merge(int32_t a, int32_t b) const {
    const uint64_t k = key(a, b);
    for (size_t i = (k * 0x9E3779B97F4A7C15ull) >> shift_;; i = (i + 1) & mask_) {
      if (merge_keys_[i] == k) return &merge_vals_[i];
      if (merge_keys_[i] == kEmpty) return nullptr;
    }
  }
  std::vector<uint64_t> merge_keys_;
  std::vector<BpeMerge> merge_vals_;
  size_t mask_ = 0;
  int shift_ = 64;
  int32_t byte_id_[256];
  bool ignore_merges_;
  int32_t unk_id_;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace trinity::tok
