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

struct BpeMerge {
  int32_t rank;
  int32_t new_id;
};

class BpeModel {
 public:
  // `vocab`: raw-byte token -> id. `merges`: (left, right) raw-byte tokens in rank order.
  // Throws ConfigError naming a merge whose parts or result are missing from the vocab.
  BpeModel(std::unordered_map<std::string, int32_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
           int32_t unk_id);

  // Appends the ids of one pre-tokenized piece (raw bytes).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }

 private:
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<uint64_t, BpeMerge> merges_;
  int32_t byte_id_[256];
  bool ignore_merges_;
  int32_t unk_id_;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace trinity::tok
