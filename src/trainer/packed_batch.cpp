// Packed model batch of ExperienceBatch rows (see packed_batch.h).
#include "trainer/packed_batch.h"

namespace trinity::trainer {

model::Batch packed_batch(const pipeline::ExperienceBatch& eb, int64_t b0, int64_t b1) {
  model::Batch mb;
  mb.seq_start.push_back(0);
  for (int64_t b = b0; b < b1; ++b) {
    const auto& s = eb.seqs[static_cast<size_t>(b)];
    const int64_t L = static_cast<int64_t>(s.size()), P = eb.prompt_len[static_cast<size_t>(b)];
    for (int64_t i = 0; i < L; ++i) {
      mb.tokens.push_back(s[static_cast<size_t>(i)]);
      mb.positions.push_back(static_cast<int32_t>(i));
      // Row i predicts token i+1; only response tokens (index >= P) are targets.
      mb.targets.push_back(i + 1 < L && i + 1 >= P ? s[static_cast<size_t>(i + 1)] : -1);
    }
    mb.seq_start.push_back(static_cast<int64_t>(mb.tokens.size()));
  }
  return mb;
}

}  // namespace trinity::trainer
