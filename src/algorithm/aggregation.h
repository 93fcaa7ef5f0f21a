// Loss aggregation (Trinity-RFT `loss_agg_mode`), as a linear map with per-row weights so the same
// weights give the gradient:  Agg(v) = Σ_b c_b Σ_t m_bt v_bt  with, over the mini-batch (batch.h),
//   token-mean               c_b = 1 / N_tokens
//   seq-mean-token-sum       c_b = 1 / N_seqs
//   seq-mean-token-mean      c_b = 1 / (n_b · N_seqs)          n_b = Σ_t m_bt
//   seq-mean-token-sum-norm  c_b = 1 / (N_seqs · L)            L = norm.max_len (Dr. GRPO)
// N_seqs counts rows with at least one masked token. A zero count gives c_b = 0 (loss 0, no NaN).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "algorithm/batch.h"

namespace trinity::algo {

enum class AggMode { kTokenMean, kSeqMeanTokenSum, kSeqMeanTokenMean, kSeqMeanTokenSumNorm };

const std::vector<std::string>& agg_mode_names();
AggMode parse_agg_mode(const std::string& s, const std::string& where);  // ConfigError lists names
std::string agg_mode_name(AggMode m);

// [B] row weights c_b (0 for rows outside `rows`).
std::vector<double> agg_row_scale(AggMode mode, const TokenBatch& mb, const Normalizer& norm,
                                  Rows rows = Rows::kAll);

inline double safe_div(double a, double b) { return b != 0 ? a / b : 0.0; }

// Value and derivative d/dlogprob of one token's loss term.
struct TokenTerm {
  double value = 0;
  double dlogp = 0;
};

// Σ_b c_b Σ_t m_bt w_bt f(b,t).value; adds c_b m_bt w_bt f(b,t).dlogp into dlogprob [B, T] (if not
// empty), w = mb.pg_weight (1 when absent). f is only called for rows with c_b != 0 and tokens with
// m_bt != 0.
template <class F>
double accumulate_token_loss(const TokenBatch& mb, const std::vector<double>& scale,
                             std::span<float> dlogprob, F&& f) {
  double loss = 0;
  for (int64_t b = 0; b < mb.B; ++b) {
    const double c = scale[static_cast<size_t>(b)];
    if (c == 0) continue;
    for (int64_t t = 0; t < mb.T; ++t) {
      double m = mb.mask[mb.at(b, t)];
      if (m == 0) continue;
      if (!mb.pg_weight.empty()) m *= mb.pg_weight[mb.at(b, t)];
      const TokenTerm r = f(b, t);
      loss += c * m * r.value;
      if (!dlogprob.empty()) dlogprob[mb.at(b, t)] += static_cast<float>(c * m * r.dlogp);
    }
  }
  return loss;
}

// Masked token mean of g(b,t) over `rows`, normalised by the mini-batch token count, so that
// micro-batch values add up (Metrics::add).
template <class G>
double token_mean_metric(const TokenBatch& mb, const Normalizer& norm, Rows rows, G&& g) {
  double s = 0;
  for (int64_t b = 0; b < mb.B; ++b) {
    if (!row_in(mb, b, rows)) continue;
    for (int64_t t = 0; t < mb.T; ++t) {
      const double m = mb.mask[mb.at(b, t)];
      if (m != 0) s += m * g(b, t);
    }
  }
  return safe_div(s, norm.n_tokens(rows));
}

}  // namespace trinity::algo
