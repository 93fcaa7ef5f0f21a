// Prefix cache (see prefix_cache.h).
#include "model/prefix_cache.h"

#include <algorithm>

namespace trinity::model {

uint64_t PrefixCache::chain_key(uint64_t prev, const int32_t* toks, int64_t n) {
  // FNV-1a over the previous key and the token ids, then a 64-bit finalizer (splitmix).
  uint64_t h = 0xcbf29ce484222325ULL ^ prev;
  for (int64_t i = 0; i < n; ++i) {
    h ^= static_cast<uint32_t>(toks[i]);
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h == 0 ? 1 : h;  // 0 is the empty chain's key
}

std::vector<int32_t> PrefixCache::lookup(const std::vector<int32_t>& tokens, int64_t max_pages) {
  const int64_t ps = cache_.page_size();
  max_pages = std::min<int64_t>(max_pages, static_cast<int64_t>(tokens.size()) / ps);
  std::vector<int32_t> hit;
  std::vector<Entry*> entries;
  uint64_t key = 0;
  for (int64_t i = 0; i < max_pages; ++i) {
    const int32_t* t = tokens.data() + i * ps;
    const uint64_t k = chain_key(key, t, ps);
    auto it = map_.find(k);
    if (it == map_.end() || it->second.prev != key || !std::equal(t, t + ps, it->second.tokens.begin())) break;
    entries.push_back(&it->second);
    hit.push_back(it->second.page);
    key = k;
  }
  // Deeper pages get older ticks, so a chain's leaves are evicted before the prefix they extend.
  tick_ += entries.size() + 1;
  for (size_t i = 0; i < entries.size(); ++i) entries[i]->tick = tick_ - i;
  for (int32_t p : hit) cache_.retain(p);
  return hit;
}

void PrefixCache::insert(const std::vector<int32_t>& tokens, const std::vector<int32_t>& pages) {
  const int64_t ps = cache_.page_size();
  const int64_t full = std::min<int64_t>(static_cast<int64_t>(tokens.size()) / ps, static_cast<int64_t>(pages.size()));
  tick_ += static_cast<uint64_t>(full) + 1;
  uint64_t key = 0;
  for (int64_t i = 0; i < full; ++i) {
    const int32_t* t = tokens.data() + i * ps;
    const uint64_t k = chain_key(key, t, ps);
    auto [it, added] = map_.try_emplace(k);
    Entry& e = it->second;
    if (added) {
      e.page = pages[static_cast<size_t>(i)];
      e.prev = key;
      e.tokens.assign(t, t + ps);
      cache_.retain(e.page);
    } else if (e.prev != key || !std::equal(t, t + ps, e.tokens.begin())) {
      break;  // a hash collision with another block: leave the cached one, stop the chain here
    }
    e.tick = tick_ - static_cast<uint64_t>(i);
    key = k;
  }
}

int64_t PrefixCache::evictable() const {
  int64_t n = 0;
  for (const auto& [k, e] : map_) n += cache_.refcount(e.page) == 1;
  return n;
}

int64_t PrefixCache::make_free(int64_t free_pages) {
  const int64_t want = free_pages - cache_.free_pages();
  if (want <= 0) return 0;
  std::vector<std::pair<uint64_t, uint64_t>> cand;  // (tick, key) of cache-only pages
  for (const auto& [k, e] : map_)
    if (cache_.refcount(e.page) == 1) cand.emplace_back(e.tick, k);
  const auto n = static_cast<size_t>(std::min<int64_t>(want, static_cast<int64_t>(cand.size())));
  std::partial_sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(n), cand.end());
  for (size_t i = 0; i < n; ++i) {
    auto it = map_.find(cand[i].second);
    cache_.release(it->second.page);
    map_.erase(it);
  }
  evictions_ += static_cast<int64_t>(n);
  return static_cast<int64_t>(n);
}

void PrefixCache::clear() {
  for (const auto& [k, e] : map_) cache_.release(e.page);
  map_.clear();
}

}  // namespace trinity::model
