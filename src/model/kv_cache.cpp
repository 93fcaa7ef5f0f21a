// Paged KV cache (see kv_cache.h).
#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/memory.h"

namespace trinity::model {

KvCache::KvCache(const ModelConfig& cfg, int64_t num_pages, int64_t page_size)
    : layers_(cfg.num_hidden_layers),
      page_size_(page_size),
      kv_dim_(cfg.num_key_value_heads * cfg.head_dim) {
  TRINITY_ASSERT(num_pages > 0 && page_size > 0, "empty KV cache");
  int64_t n_signed = 0;
  if (__builtin_mul_overflow(layers_, num_pages, &n_signed) ||
      __builtin_mul_overflow(n_signed, page_size_, &n_signed) || __builtin_mul_overflow(n_signed, kv_dim_, &n_signed) ||
      n_signed > (int64_t{1} << 56))
    n_signed = -1;
  // K and V, zero-filled: checked against MemAvailable first (filling would otherwise page in memory
  // the machine does not have, and the OOM killer ends the process without a message).
  check_allocation(
      n_signed < 0 ? -1 : 2 * n_signed * static_cast<int64_t>(sizeof(float)),
      strcat("allocating the KV cache (", num_pages, " pages of ", page_size, " tokens x ", layers_, " layers)"),
      "model");
  const size_t n = static_cast<size_t>(n_signed);
  k_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
  refs_.assign(static_cast<size_t>(num_pages), 0);
  free_.reserve(static_cast<size_t>(num_pages));
  for (int64_t p = num_pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
}

int64_t KvCache::pages_for_bytes(const ModelConfig& cfg, int64_t bytes, int64_t page_size) {
  const int64_t per_page = static_cast<int64_t>(bytes_per_page(cfg, page_size));
  return std::max<int64_t>(1, bytes / per_page);
}

size_t KvCache::bytes_per_page(const ModelConfig& cfg, int64_t page_size) {
  return static_cast<size_t>(2 * cfg.num_hidden_layers * page_size * cfg.num_key_value_heads * cfg.head_dim) *
         sizeof(float);
}

size_t KvCache::bytes_per_token() const {
  return static_cast<size_t>(2 * layers_ * kv_dim_) * sizeof(float);
}

int32_t KvCache::alloc() {
  if (free_.empty()) return -1;
  const int32_t p = free_.back();
  free_.pop_back();
  refs_[static_cast<size_t>(p)] = 1;
  return p;
}

void KvCache::release(int32_t page) {
  int32_t& r = refs_[static_cast<size_t>(page)];
  TRINITY_ASSERT(r > 0, "release of a free KV page ", page);
  if (--r == 0) free_.push_back(page);
}

void KvCache::copy_page(int32_t dst, int32_t src) {
  const size_t n = static_cast<size_t>(page_size_ * kv_dim_) * sizeof(float);
  for (int64_t l = 0; l < layers_; ++l) {
    std::memcpy(k(l, dst, 0), k(l, src, 0), n);
    std::memcpy(v(l, dst, 0), v(l, src, 0), n);
  }
}

int64_t kv_pages_needed(const KvCache& cache, const SeqKv& seq, int64_t n_new) {
  const int64_t ps = cache.page_size();
  const int64_t have = static_cast<int64_t>(seq.pages.size());
  const int64_t want = (seq.len + n_new + ps - 1) / ps;
  int64_t need = std::max<int64_t>(0, want - have);
  // Writing into a shared, partly filled last page needs a private copy first.
  if (n_new > 0 && seq.len % ps != 0 && have > 0 && cache.refcount(seq.pages.back()) > 1) ++need;
  return need;
}

bool kv_reserve(KvCache& cache, SeqKv& seq, int64_t n_new) {
  if (kv_pages_needed(cache, seq, n_new) > cache.free_pages()) return false;
  const int64_t ps = cache.page_size();
  if (n_new > 0 && seq.len % ps != 0 && !seq.pages.empty() && cache.refcount(seq.pages.back()) > 1) {
    const int32_t fresh = cache.alloc();
    cache.copy_page(fresh, seq.pages.back());
    cache.release(seq.pages.back());
    seq.pages.back() = fresh;
  }
  const int64_t want = (seq.len + n_new + ps - 1) / ps;
  while (static_cast<int64_t>(seq.pages.size()) < want) seq.pages.push_back(cache.alloc());
  return true;
}

SeqKv kv_fork(KvCache& cache, const SeqKv& seq) {
  for (int32_t p : seq.pages) cache.retain(p);
  return seq;
}

void kv_free(KvCache& cache, SeqKv& seq) {
  for (int32_t p : seq.pages) cache.release(p);
  seq.pages.clear();
  seq.len = 0;
}

}  // namespace trinity::model
