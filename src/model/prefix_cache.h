// Prefix cache over the paged KV cache: full pages of prompts are kept by content, keyed by a chain
// hash (previous page's key, the page's token ids), so a request whose prompt starts with a cached
// prefix reuses those pages (ref-counted into its page table) and prefills only the rest. The cache
// holds one reference per cached page; a page referenced by nothing else is evictable, least recently
// used first (leaves of a chain before their prefix). Hits compare token ids, so a hash collision is
// a miss, never wrong KV. The cached KV belongs to one set of weights: clear() on a weight swap.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "model/kv_cache.h"

namespace trinity::model {

class PrefixCache {
 public:
  explicit PrefixCache(KvCache& cache) : cache_(cache) {}
  ~PrefixCache() { clear(); }
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The longest cached chain of the first `max_pages` full pages of `tokens`: its pages, each retained
  // for the caller (release them, e.g. via kv_free, when done). Marks them recently used.
  std::vector<int32_t> lookup(const std::vector<int32_t>& tokens, int64_t max_pages);
  // Registers the full pages of `tokens` (the first tokens.size() / page_size pages of `pages`, whose
  // KV holds exactly those tokens). Pages already cached under the same key are kept as they are.
  void insert(const std::vector<int32_t>& tokens, const std::vector<int32_t>& pages);
  // Evicts least recently used cache-only pages until the KV cache has `free_pages` free pages or
  // nothing evictable is left. Returns the pages evicted.
  int64_t make_free(int64_t free_pages);
  // Drops every entry (pages still used by a sequence stay with it).
  void clear();

  int64_t pages() const { return static_cast<int64_t>(map_.size()); }
  int64_t evictable() const;  // cached pages referenced only by the cache
  int64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    int32_t page = -1;
    uint64_t prev = 0;
    std::vector<int32_t> tokens;
    uint64_t tick = 0;
  };
  static uint64_t chain_key(uint64_t prev, const int32_t* toks, int64_t n);

  KvCache& cache_;
  std::unordered_map<uint64_t, Entry> map_;
  uint64_t tick_ = 0;
  int64_t evictions_ = 0;
};

}  // namespace trinity::model
