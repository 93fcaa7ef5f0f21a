// Paged KV cache for generation. Memory is a fixed pool of pages of `page_size` token slots per
// layer (K and V, [page_size, NKV*HS] each); a sequence holds a page table. Pages are ref-counted so
// n samples of one prompt share the prompt's pages; the partly filled last page is copied on write.
// Running out of pages is an expected outcome (reserve() returns false), never a crash.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace trinity::model {

class KvCache {
 public:
  // Throws ValueError "[model] allocating the KV cache (...) needs N GiB but only M GiB ..." when the
  // pool does not fit in MemAvailable (core/memory.h), before allocating it.
  KvCache(const ModelConfig& cfg, int64_t num_pages, int64_t page_size = 16);
  // K and V bytes of one page of `page_size` tokens over all layers.
  static size_t bytes_per_page(const ModelConfig& cfg, int64_t page_size = 16);
  // Pages that fit in `bytes` for this model (at least 1).
  static int64_t pages_for_bytes(const ModelConfig& cfg, int64_t bytes, int64_t page_size = 16);

  int64_t page_size() const { return page_size_; }
  int64_t num_pages() const { return static_cast<int64_t>(refs_.size()); }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  int64_t kv_dim() const { return kv_dim_; }  // NKV * HS
  size_t bytes() const { return (k_.size() + v_.size()) * sizeof(float); }
  size_t bytes_per_token() const;

  // Slot `slot` of page `page` in layer `layer`: [NKV*HS].
  float* k(int64_t layer, int32_t page, int64_t slot) {
    return k_.data() + ((layer * num_pages() + page) * page_size_ + slot) * kv_dim_;
  }
  float* v(int64_t layer, int32_t page, int64_t slot) {
    return v_.data() + ((layer * num_pages() + page) * page_size_ + slot) * kv_dim_;
  }
  const float* k(int64_t layer, int32_t page, int64_t slot) const {
    return k_.data() + ((layer * num_pages() + page) * page_size_ + slot) * kv_dim_;
  }
  const float* v(int64_t layer, int32_t page, int64_t slot) const {
    return v_.data() + ((layer * num_pages() + page) * page_size_ + slot) * kv_dim_;
  }

  int32_t alloc();  // -1 when the pool is exhausted
  void retain(int32_t page) { ++refs_[static_cast<size_t>(page)]; }
  void release(int32_t page);
  int32_t refcount(int32_t page) const { return refs_[static_cast<size_t>(page)]; }
  // Copies every layer's K and V of page `src` to page `dst`.
  void copy_page(int32_t dst, int32_t src);

 private:
  int64_t layers_, page_size_, kv_dim_;
  std::vector<float> k_, v_;  // [L, pages, page_size, NKV*HS]
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;
};

// One sequence's pages; `len` tokens are stored.
struct SeqKv {
  std::vector<int32_t> pages;
  int64_t len = 0;
};

// Pages needed to grow a sequence from `len` to `len + n_new` tokens (incl. a copy-on-write page).
int64_t kv_pages_needed(const KvCache& cache, const SeqKv& seq, int64_t n_new);
// Makes room for n_new more tokens (allocating pages, copying a shared last page). Returns false,
// changing nothing, when the pool has too few free pages.
bool kv_reserve(KvCache& cache, SeqKv& seq, int64_t n_new);
// A new sequence sharing all of `seq`'s pages (prefix sharing for n samples).
SeqKv kv_fork(KvCache& cache, const SeqKv& seq);
// Releases every page of the sequence and empties it.
void kv_free(KvCache& cache, SeqKv& seq);

}  // namespace trinity::model
