// TokenBatch validation and the mini-batch normaliser; see batch.h.
#include "algorithm/batch.h"

#include <algorithm>

#include "core/error.h"

namespace trinity::algo {

namespace {
void check(const char* who, const char* name, size_t got, size_t want, bool required) {
  if (got == want) return;
  if (got == 0 && required)
    throw ValueError("algorithm", strcat(who, ": needs '", name, "' but it was not provided"));
  if (got != 0 || required)
    throw ShapeError("algorithm", strcat(who, ": '", name, "' has ", got, " values, expected ", want));
}
}  // namespace

void TokenBatch::validate(const char* who, unsigned needs) const {
  if (B <= 0 || T <= 0)
    throw ValueError("algorithm", strcat(who, ": empty batch (B=", B, ", T=", T,
                                         "); a loss needs at least one experience and one token"));
  const size_t n = static_cast<size_t>(B * T);
  check(who, "logprob", logprob.size(), n, true);
  check(who, "action_mask", mask.size(), n, true);
  check(who, "old_logprob", old_logprob.size(), n, needs & kNeedOldLogprob);
  check(who, "ref_logprob", ref_logprob.size(), n, needs & kNeedRefLogprob);
  check(who, "advantages", advantages.size(), n, needs & kNeedAdvantages);
  check(who, "entropy", entropy.size(), n, needs & kNeedEntropy);
  check(who, "is_expert", is_expert.size(), static_cast<size_t>(B), needs & kNeedExpertMask);
  check(who, "keep (the mini-batch token mask)", keep.size(), n, needs & kNeedKeepMask);
}

bool row_in(const TokenBatch& mb, int64_t b, Rows r) {
  switch (r) {
    case Rows::kAll: return true;
    case Rows::kUsual: return !mb.expert(b);
    case Rows::kExpert: return mb.expert(b);
  }
  return false;
}

double row_tokens(const TokenBatch& mb, int64_t b) {
  double n = 0;
  for (int64_t t = 0; t < mb.T; ++t) n += mb.mask[mb.at(b, t)];
  return n;
}

Normalizer Normalizer::of(const TokenBatch& mb) {
  Normalizer n;
  if (mb.mask.size() != static_cast<size_t>(mb.B * mb.T))
    throw ShapeError("algorithm", strcat("normaliser: action_mask has ", mb.mask.size(),
                                         " values, expected B*T = ", mb.B * mb.T));
  for (int64_t b = 0; b < mb.B; ++b) {
    const double k = row_tokens(mb, b);
    const double s = k > 0 ? 1.0 : 0.0;
    n.rows += 1, n.tokens += k, n.seqs += s;
    (mb.expert(b) ? n.expert_tokens : n.usual_tokens) += k;
    (mb.expert(b) ? n.expert_seqs : n.usual_seqs) += s;
    for (int64_t t = mb.T - 1; t >= 0; --t)
      if (mb.mask[mb.at(b, t)] != 0) {
        n.max_len = std::max(n.max_len, static_cast<double>(t + 1));
        break;
      }
  }
  return n;
}

Normalizer& Normalizer::operator+=(const Normalizer& o) {
  rows += o.rows, tokens += o.tokens, seqs += o.seqs;
  usual_tokens += o.usual_tokens, usual_seqs += o.usual_seqs;
  expert_tokens += o.expert_tokens, expert_seqs += o.expert_seqs;
  max_len = std::max(max_len, o.max_len);
  return *this;
}

double Normalizer::n_tokens(Rows r) const {
  return r == Rows::kAll ? tokens : r == Rows::kUsual ? usual_tokens : expert_tokens;
}
double Normalizer::n_seqs(Rows r) const {
  return r == Rows::kAll ? seqs : r == Rows::kUsual ? usual_seqs : expert_seqs;
}

}  // namespace trinity::algo
