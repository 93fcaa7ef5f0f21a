// Byte-level BPE merge loop with a rank hash map and a word cache (see bpe.h). The heap holds
// candidate merges (rank, position); stale entries are skipped when popped, as in HF tokenizers.
#include "tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "core/error.h"

namespace trinity::tok {

namespace {
constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kMaxCacheEntries = 1 << 18;
}  // namespace

BpeModel::BpeModel(ByteVocab vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                   int32_t unk_id)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges), unk_id_(unk_id) {
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(std::string(1, static_cast<char>(b)));
    byte_id_[b] = it == vocab_.end() ? -1 : it->second;
  }
  size_t cap = 16;
  while (cap < merges.size() * 2) cap <<= 1;
  merge_keys_.assign(cap, kEmpty);
  merge_vals_.assign(cap, BpeMerge{0, 0});
  mask_ = cap - 1;
  shift_ = 64 - __builtin_ctzll(cap);
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [a, b] = merges[r];
    auto ia = vocab_.find(a), ib = vocab_.find(b), ic = vocab_.find(a + b);
    if (ia == vocab_.end() || ib == vocab_.end() || ic == vocab_.end())
      throw ConfigError("tokenizer", strcat("model.merges[", r, "]: merge of tokens not in the vocab (",
                                            ia == vocab_.end() ? "left part" : ib == vocab_.end() ? "right part" : "merged token",
                                            " missing)"));
    const uint64_t k = key(ia->second, ib->second);
    size_t i = (k * 0x9E3779B97F4A7C15ull) >> shift_;
    while (merge_keys_[i] != kEmpty && merge_keys_[i] != k) i = (i + 1) & mask_;
    merge_keys_[i] = k;  // a duplicate merge takes the later rank, as HF's map construction does
    merge_vals_[i] = BpeMerge{static_cast<int32_t>(r), ic->second};
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (word.size() == 1) {
    const int32_t id = byte_id_[static_cast<unsigned char>(word[0])];
    if (id >= 0) out.push_back(id);
    else if (unk_id_ >= 0) out.push_back(unk_id_);
    return;
  }
  const bool cacheable = word.size() < kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::vector<int32_t> v(out.begin() + static_cast<long>(start), out.end());
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(v));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  struct Sym {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  struct Cand {
    int32_t rank, pos, new_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<Sym> sym;
  sym.reserve(word.size());
  for (unsigned char c : word) {
    const int32_t id = byte_id_[c];
    if (id < 0) {
      if (unk_id_ < 0) continue;  // HF drops unknown symbols when the model has no unk token
      sym.push_back({unk_id_, 0, 0, true});
    } else {
      sym.push_back({id, 0, 0, true});
    }
  }
  const int32_t n = static_cast<int32_t>(sym.size());
  for (int32_t i = 0; i < n; ++i) sym[i].prev = i - 1, sym[i].next = i + 1 < n ? i + 1 : -1;
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (const BpeMerge* m = find_merge(sym[i].id, sym[i + 1].id)) heap.push({m->rank, i, m->new_id});
  }
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& left = sym[c.pos];
    if (!left.alive || left.next < 0) continue;
    Sym& right = sym[left.next];
    const BpeMerge* m = find_merge(left.id, right.id);
    if (!m || m->new_id != c.new_id || m->rank != c.rank) continue;
    left.id = c.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = c.pos;
    if (left.prev >= 0) {
      if (const BpeMerge* p = find_merge(sym[left.prev].id, left.id)) heap.push({p->rank, left.prev, p->new_id});
    }
    if (left.next >= 0) {
      if (const BpeMerge* q = find_merge(left.id, sym[left.next].id)) heap.push({q->rank, c.pos, q->new_id});
    }
  }
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

}  // namespace trinity::tok
