// Packed model batch of ExperienceBatch rows (see packed_batch.h).
#include "trainer/packed_batch.h"

#include <map>
#include <vector>

namespace trinity::trainer {

namespace {

// Rows [i0, i1) of sequence s as one packed sequence, at positions i0.. (row i predicts token i+1;
// only response tokens, index >= P, are targets), continuing sequence `prefix` (-1: none).
void append_rows(model::Batch& mb, const std::vector<int32_t>& s, int64_t i0, int64_t i1, int64_t P, int64_t prefix) {
  const int64_t L = static_cast<int64_t>(s.size());
  for (int64_t i = i0; i < i1; ++i) {
    mb.tokens.push_back(s[static_cast<size_t>(i)]);
    mb.positions.push_back(static_cast<int32_t>(i));
    mb.targets.push_back(i + 1 < L && i + 1 >= P ? s[static_cast<size_t>(i + 1)] : -1);
  }
  mb.seq_start.push_back(static_cast<int64_t>(mb.tokens.size()));
  mb.prefix.push_back(prefix);
}

}  // namespace

model::Batch packed_batch(const pipeline::ExperienceBatch& eb, int64_t b0, int64_t b1, bool share_prompts) {
  model::Batch mb;
  mb.seq_start.push_back(0);
  // Groups of >= 2 rows with equal shared prompts (ExperienceBatch::shared_prompt) share one.
  auto shared_part = [&](int64_t b) {
    const auto sp = eb.shared_prompt(b);
    return std::vector<int32_t>(sp.begin(), sp.end());
  };
  std::map<std::vector<int32_t>, int64_t> count, prefix_seq;
  if (share_prompts)
    for (int64_t b = b0; b < b1; ++b)
      if (auto key = shared_part(b); !key.empty()) ++count[std::move(key)];
  for (int64_t b = b0; b < b1; ++b) {
    const auto& s = eb.seqs[static_cast<size_t>(b)];
    const int64_t P = eb.prompt_len[static_cast<size_t>(b)];
    auto key = share_prompts ? shared_part(b) : std::vector<int32_t>{};
    const auto n = key.empty() ? count.end() : count.find(key);
    if (n == count.end() || n->second < 2) {
      append_rows(mb, s, 0, static_cast<int64_t>(s.size()), P, -1);
      continue;
    }
    const int64_t shared = static_cast<int64_t>(key.size());
    auto [it, first] = prefix_seq.try_emplace(std::move(key), mb.num_seqs());
    if (first) append_rows(mb, s, 0, shared, P, -1);  // the prefix itself, before its first continuation
    append_rows(mb, s, shared, static_cast<int64_t>(s.size()), P, it->second);
  }
  if (prefix_seq.empty()) mb.prefix.clear();
  return mb;
}

}  // namespace trinity::trainer
