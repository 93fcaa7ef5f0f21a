// Entropy bonus; see entropy.h.
#include "algorithm/entropy.h"

namespace trinity::algo {

double EntropyFn::loss(const TokenBatch& mb, const Normalizer& norm, AggMode mode,
                       std::span<float> dentropy, Metrics& metrics) const {
  if (kind_ == EntropyKind::kNone) return 0.0;
  if (mb.entropy.empty() && coef_ == 0) return 0.0;  // nothing to add and nothing to log
  mb.validate("entropy_loss_fn", kNeedEntropy);
  const Rows rows = kind_ == EntropyKind::kMix ? Rows::kUsual : Rows::kAll;
  const auto scale = agg_row_scale(mode, mb, norm, rows);
  double agg = 0;
  for (int64_t b = 0; b < mb.B; ++b) {
    const double c = scale[static_cast<size_t>(b)];
    if (c == 0) continue;
    for (int64_t t = 0; t < mb.T; ++t) {
      const size_t i = mb.at(b, t);
      if (mb.mask[i] == 0) continue;
      agg += c * mb.mask[i] * mb.entropy[i];
      if (!dentropy.empty()) dentropy[i] += static_cast<float>(-coef_ * c * mb.mask[i]);
    }
  }
  metrics.add("entropy_loss", agg);
  metrics.set("entropy_coef", coef_);
  return -coef_ * agg;
}

const Registry<EntropyFn>& entropy_registry() {
  static const Registry<EntropyFn> reg = [] {
    const ArgSpec spec = {{"entropy_coef", 0.0, "coefficient of the entropy bonus"}};
    auto mk = [&](const char* name, EntropyKind k, const char* doc) {
      return RegistryEntry<EntropyFn>{
          name, doc, spec, [k](const Args& a) { return std::make_unique<EntropyFn>(k, a.f64("entropy_coef")); }};
    };
    return Registry<EntropyFn>("entropy_loss_fn",
                               {mk("default", EntropyKind::kDefault, "−coef·Agg(H) over all rows"),
                                mk("mix", EntropyKind::kMix, "−coef·Agg(H) over non-expert rows"),
                                mk("none", EntropyKind::kNone, "no entropy term")});
  }();
  return reg;
}

}  // namespace trinity::algo
