// Loss aggregation weights; see aggregation.h.
#include "algorithm/aggregation.h"

#include "algorithm/args.h"
#include "core/error.h"

namespace trinity::algo {

const std::vector<std::string>& agg_mode_names() {
  static const std::vector<std::string> k = {"token-mean", "seq-mean-token-sum", "seq-mean-token-mean",
                                             "seq-mean-token-sum-norm"};
  return k;
}

AggMode parse_agg_mode(const std::string& s, const std::string& where) {
  const auto& n = agg_mode_names();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == s) return static_cast<AggMode>(i);
  throw ConfigError("algorithm", strcat(where, ": loss_agg_mode \"", s, "\" is unknown; valid values are: ",
                                        join_names(n)));
}

std::string agg_mode_name(AggMode m) { return agg_mode_names()[static_cast<size_t>(m)]; }

std::vector<double> agg_row_scale(AggMode mode, const TokenBatch& mb, const Normalizer& norm, Rows rows) {
  std::vector<double> c(static_cast<size_t>(mb.B), 0.0);
  const double ntok = norm.n_tokens(rows), nseq = norm.n_seqs(rows);
  for (int64_t b = 0; b < mb.B; ++b) {
    if (!row_in(mb, b, rows)) continue;
    double& cb = c[static_cast<size_t>(b)];
    switch (mode) {
      case AggMode::kTokenMean: cb = safe_div(1.0, ntok); break;
      case AggMode::kSeqMeanTokenSum: cb = safe_div(1.0, nseq); break;
      case AggMode::kSeqMeanTokenMean: cb = safe_div(1.0, row_tokens(mb, b) * nseq); break;
      case AggMode::kSeqMeanTokenSumNorm: cb = safe_div(1.0, nseq * norm.max_len); break;
    }
  }
  return c;
}

}  // namespace trinity::algo
