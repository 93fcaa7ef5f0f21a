// Loss-side tests: aggregation modes (hand values), exact micro-batch splitting, KL estimators and
// the adaptive controller, entropy bonus, every policy loss (finite differences away from clip
// boundaries, exact zero gradients where clipping stops them, hand-computed values), edge cases.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithm/algorithm.h"
#include "test_util.h"

namespace trinity::algo {
namespace {

using test::Data;
using test::random_data;

Data hand_data() {
  // v = [[1,2,3],[4,0,0]], mask [[1,1,0],[1,0,0]]; logprob = −v so sft's token term is v.
  Data d;
  d.B = 2, d.T = 3;
  d.lp = {-1, -2, -3, -4, 0, 0};
  d.mask = {1, 1, 0, 1, 0, 0};
  return d;
}

double sft_with(AggMode mode, const Data& d) {
  ArgMap a{{"loss_agg_mode", agg_mode_name(mode)}};
  auto loss = policy_loss_registry().make("sft", a);
  Metrics m;
  return loss->forward_backward(d.batch(), Normalizer::of(d.batch()), {}, m);
}

TEST(Aggregation, HandValues) {
  const Data d = hand_data();
  EXPECT_NEAR(sft_with(AggMode::kTokenMean, d), 7.0 / 3.0, 1e-12);
  EXPECT_NEAR(sft_with(AggMode::kSeqMeanTokenSum, d), 3.5, 1e-12);
  EXPECT_NEAR(sft_with(AggMode::kSeqMeanTokenMean, d), 2.75, 1e-12);
  EXPECT_NEAR(sft_with(AggMode::kSeqMeanTokenSumNorm, d), 7.0 / 4.0, 1e-12);  // max_len 2, 2 seqs
}

TEST(Aggregation, UnknownModeListsValidOnes) {
  try {
    parse_agg_mode("token-sum", "test");
    FAIL() << "no throw";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("seq-mean-token-mean"), std::string::npos) << e.what();
  }
}

// A loss with a mini-batch token mask (m2po) gets it computed once over d, as minibatch_actor_loss
// does; the mask is then fixed data for finite differences and micro-batch splits.
void set_minibatch_mask(const PolicyLoss& l, Data& d) {
  Metrics m;
  if (l.needs_minibatch_mask()) d.keep = l.minibatch_mask(d.batch(), m);
}

TEST(Aggregation, AllMaskedGivesZeroNotNan) {
  Data d = random_data(3, 3, 4);
  std::fill(d.mask.begin(), d.mask.end(), 0.0f);
  for (const auto& name : policy_loss_registry().names()) {
    if (name == "dpo") continue;
    auto loss = policy_loss_registry().make(name, {});
    set_minibatch_mask(*loss, d);
    std::vector<float> g(d.lp.size(), 0.0f);
    Metrics m;
    const double v = loss->forward_backward(d.batch(), Normalizer::of(d.batch()), g, m);
    d.keep.clear();
    EXPECT_EQ(v, 0.0) << name;
    for (float x : g) EXPECT_EQ(x, 0.0f) << name;
    for (const auto& [k, e] : m.entries()) EXPECT_TRUE(std::isfinite(e.value)) << name << " " << k;
  }
}

TEST(Batch, EmptyBatchIsAClearError) {
  Data d;
  auto loss = policy_loss_registry().make("ppo", {});
  Metrics m;
  try {
    loss->forward_backward(d.batch(), Normalizer{}, {}, m);
    FAIL() << "no throw";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("empty batch"), std::string::npos) << e.what();
  }
}

TEST(Batch, MissingInputIsNamed) {
  Data d = random_data(1, 2, 3);
  d.old.clear();
  auto loss = policy_loss_registry().make("ppo", {});
  Metrics m;
  try {
    loss->forward_backward(d.batch(), Normalizer::of(d.batch()), {}, m);
    FAIL() << "no throw";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("old_logprob"), std::string::npos) << e.what();
  }
}

// ---- KL ---------------------------------------------------------------------------------------

TEST(Kl, HandValues) {
  const double lp = -1.0, ref = -1.5;  // x = ref − lp = −0.5
  auto k = [&](const char* name) { return kl_registry().make(name, {})->token(lp, ref, 0, false); };
  EXPECT_NEAR(k("k1").value, 0.5, 1e-12);
  EXPECT_NEAR(k("k2").value, 0.125, 1e-12);
  EXPECT_NEAR(k("k3").value, std::exp(-0.5) + 0.5 - 1, 1e-12);
  EXPECT_NEAR(k("low_var_kl").value, std::exp(-0.5) + 0.5 - 1, 1e-12);
  EXPECT_NEAR(k("abs").value, 0.5, 1e-12);
  EXPECT_EQ(k("none").value, 0.0);
  // corrected_k3 with old: clamp(exp(lp − old), 0, 2)·k3
  auto c = kl_registry().make("corrected_k3", {})->token(lp, ref, -1.2, true);
  EXPECT_NEAR(c.value, std::exp(0.2) * (std::exp(-0.5) + 0.5 - 1), 1e-12);
  auto c2 = kl_registry().make("corrected_k3", {})->token(lp, ref, -3.0, true);  // ratio e² > 2: clamped
  EXPECT_NEAR(c2.value, 2 * (std::exp(-0.5) + 0.5 - 1), 1e-12);
  EXPECT_NEAR(c2.dlogp, 2 * (1 - std::exp(-0.5)), 1e-12);  // the clamp stops the ratio's gradient
  // low_var_kl clamps: x = 30 → value 10 and zero gradient
  auto lv = kl_registry().make("low_var_kl", {})->token(-31.0, -1.0, 0, false);
  EXPECT_EQ(lv.value, 10.0);
  EXPECT_EQ(lv.dlogp, 0.0);
}

TEST(Kl, TokenDerivativesMatchFiniteDifferences) {
  for (const auto& name : kl_registry().names()) {
    auto f = kl_registry().make(name, {});
    for (double lp : {-2.3, -0.7, -0.1})
      for (double ref : {-1.9, -0.4})
        for (bool has_old : {false, true}) {
          const double old = -0.9, h = 1e-6;
          const double fd = (f->token(lp + h, ref, old, has_old).value - f->token(lp - h, ref, old, has_old).value) / (2 * h);
          EXPECT_NEAR(f->token(lp, ref, old, has_old).dlogp, fd, 1e-6) << name << " lp=" << lp << " ref=" << ref;
        }
  }
}

TEST(Kl, LossAggregatesAndScales) {
  Data d = random_data(7, 4, 5);
  for (const auto& name : kl_registry().names()) {
    auto f = kl_registry().make(name, {{"kl_coef", 0.3}});
    for (const auto& mode_name : agg_mode_names()) {
      const AggMode mode = parse_agg_mode(mode_name, "t");
      auto loss_of = [&] {
        Metrics m;
        return f->loss(d.batch(), Normalizer::of(d.batch()), mode, {}, m);
      };
      std::vector<float> g(d.lp.size(), 0.0f);
      Metrics m;
      const double v = f->loss(d.batch(), Normalizer::of(d.batch()), mode, g, m);
      if (name == "none") {
        EXPECT_EQ(v, 0.0);
        continue;
      }
      EXPECT_NEAR(v, 0.3 * m.get("kl_loss"), 1e-12) << name;
      EXPECT_EQ(m.get("kl_coef"), 0.3);
      test::expect_fd(d, d.lp, g, loss_of, "kl " + name + " " + mode_name);
    }
  }
}

TEST(Kl, PenaltyAndAdaptiveController) {
  // Two rows, T = 2; k1 penalty with coef 0.1 on kl = old − ref.
  std::vector<float> rewards = {0, 1, 0, 2}, old = {-1, -1, -2, -2}, ref = {-1.5, -1, -2, -3}, mask = {1, 1, 1, 0};
  auto f = kl_registry().make("k1", {{"kl_coef", 0.1}, {"adaptive", true}, {"target_kl", 0.1}, {"horizon", 10}});
  Metrics m;
  f->apply_penalty(rewards, old, ref, mask, 2, 2, m);
  EXPECT_NEAR(rewards[0], -0.05, 1e-7);
  EXPECT_NEAR(rewards[1], 1.0, 1e-7);
  EXPECT_NEAR(rewards[2], 0.0, 1e-7);
  EXPECT_NEAR(rewards[3], 2.0, 1e-7);  // masked: no penalty
  // kl = mean over rows of per-row masked mean: row0 (0.5 + 0)/2 = 0.25, row1 0/1 = 0 → 0.125
  EXPECT_NEAR(m.get("kl"), 0.125, 1e-7);
  EXPECT_NEAR(m.get("kl_coef"), 0.1, 1e-12);
  // e = clip(0.125/0.1 − 1, ±0.2) = 0.2 (clipped from 0.25); coef ← 0.1·(1 + 0.2·2/10)
  EXPECT_NEAR(f->coef(), 0.1 * 1.04, 1e-9);
  auto fixed = kl_registry().make("k1", {{"kl_coef", 0.1}});
  fixed->update(5.0, 100);
  EXPECT_EQ(fixed->coef(), 0.1);
}

TEST(Kl, AdaptiveNeedsTargetAndHorizon) {
  EXPECT_THROW(kl_registry().make("k2", {{"adaptive", true}}), ConfigError);
}

TEST(Entropy, BonusGradientAndMixRows) {
  Data d = random_data(11, 5, 4, /*experts=*/true);
  for (const char* name : {"default", "mix"}) {
    auto e = entropy_registry().make(name, {{"entropy_coef", 0.05}});
    std::vector<float> g(d.ent.size(), 0.0f);
    Metrics m;
    const double v = e->loss(d.batch(), Normalizer::of(d.batch()), AggMode::kTokenMean, g, m);
    EXPECT_NEAR(v, -0.05 * m.get("entropy_loss"), 1e-12);
    auto loss_of = [&] {
      Metrics mm;
      return e->loss(d.batch(), Normalizer::of(d.batch()), AggMode::kTokenMean, {}, mm);
    };
    test::expect_fd(d, d.ent, g, loss_of, std::string("entropy ") + name);
    if (std::string(name) == "mix")
      for (int64_t b = 0; b < d.B; ++b)
        if (d.expert[static_cast<size_t>(b)]) {
          for (int64_t t = 0; t < d.T; ++t) EXPECT_EQ(g[static_cast<size_t>(b * d.T + t)], 0.0f);
        }
  }
  auto none = entropy_registry().make("none", {});
  Metrics m;
  EXPECT_EQ(none->loss(d.batch(), Normalizer::of(d.batch()), AggMode::kTokenMean, {}, m), 0.0);
  EXPECT_TRUE(m.empty());
}

// ---- policy losses ------------------------------------------------------------------------------

double run(const PolicyLoss& l, const Data& d, std::vector<float>* g = nullptr, Metrics* m = nullptr) {
  Metrics tmp;
  return l.forward_backward(d.batch(), Normalizer::of(d.batch()), g ? std::span<float>(*g) : std::span<float>(),
                            m ? *m : tmp);
}

// Every registered loss, with args that exercise its variants.
std::vector<std::pair<std::string, ArgMap>> loss_cases() {
  std::vector<std::pair<std::string, ArgMap>> c;
  for (const auto& n : policy_loss_registry().names()) c.push_back({n, {}});
  c.push_back({"ppo", {{"clip_range_low", 0.1}, {"clip_range_high", 0.28}, {"loss_agg_mode", "seq-mean-token-mean"}}});
  c.push_back({"ppo", {{"enable_sequence_masking", true}, {"delta_sequence_masking", 0.05}}});
  c.push_back({"ppo", {{"fallback_to_policy_gradient", true}, {"loss_agg_mode", "seq-mean-token-sum"}}});
  c.push_back({"gspo", {{"clip_range_low", 0.3}, {"clip_range_high", 0.5}}});
  c.push_back({"cispo", {{"enable_mask_clip", true}, {"loss_agg_mode", "seq-mean-token-sum-norm"}}});
  c.push_back({"sft_phi", {{"cutoff_prob", 0.5}}});
  for (const char* mode : {"one-side", "two-side", "ring"})
    c.push_back({"rec", {{"clip_mode", mode}, {"weight", "importance_sampling"}, {"regularizer", "k2"}, {"regularizer_coef", 0.1}}});
  c.push_back({"rec", {{"clip_mode", "gspo-one-side"}, {"weight", "gspo_importance_sampling"}}});
  c.push_back({"rec", {{"weight", "advantage"}, {"regularizer", "forward-kl"}, {"regularizer_coef", 0.2}, {"temp", 2.0}}});
  c.push_back({"dpo", {{"beta", 0.5}, {"label_smoothing", 0.2}}});
  c.push_back({"mix", {{"mu", 0.3}, {"sft_loss_agg_mode", "seq-mean-token-sum"}}});
  c.push_back({"mix_chord", {{"mu_warmup_steps", 4}, {"mu_decay_steps", 10}, {"mu_peak", 0.6}, {"mu_valley", 0.05}}});
  c.push_back({"mix_chord", {{"enable_phi_function", false}, {"mu_peak", 0.5}, {"mu_valley", 0.5}}});
  return c;
}

std::string label(const std::pair<std::string, ArgMap>& c) {
  std::string s = c.first;
  for (const auto& [k, v] : c.second) s += " " + k + "=" + v.repr();
  return s;
}

// Losses whose gradient is the derivative of their value. The others define the gradient through a
// stop-gradient (cispo, sapo, topr, gspo, sft_is, sft_phi, rec importance weights, ppo's REINFORCE
// fallback): finite differences of the value do not apply; their gradients are checked against
// PyTorch autograd (torch_oracle.py, ctest algorithm_torch_golden) and by the hand values below.
bool fd_applies(const std::pair<std::string, ArgMap>& c) {
  const std::string& n = c.first;
  auto arg = [&](const char* k) {
    auto it = c.second.find(k);
    return it == c.second.end() ? ArgValue() : it->second;
  };
  if (n == "cispo" || n == "sapo" || n == "topr" || n == "gspo" || n == "sft_is" || n == "sft_phi") return false;
  if (n == "ppo" && arg("fallback_to_policy_gradient").repr() == "true") return false;
  if (n == "rec" && (arg("weight").repr() == "\"importance_sampling\"" ||
                     arg("weight").repr() == "\"gspo_importance_sampling\""))
    return false;
  if (n == "mix_chord" && arg("enable_phi_function").repr() != "false") return false;
  return true;
}

TEST(PolicyLoss, GradientsMatchFiniteDifferences) {
  int checked = 0;
  for (const auto& c : loss_cases()) {
    if (!fd_applies(c)) continue;
    ++checked;
    auto loss = policy_loss_registry().make(c.first, c.second);
    for (uint64_t seed : {1u, 2u, 3u}) {
      Data d = random_data(seed * 17 + 5, 6, 7, /*experts=*/true);
      d.step = 6;
      set_minibatch_mask(*loss, d);
      std::vector<float> g(d.lp.size(), 0.0f);
      run(*loss, d, &g);
      test::expect_fd(d, d.lp, g, [&] { return run(*loss, d); }, label(c));
    }
  }
  EXPECT_GE(checked, 12);
}

TEST(PolicyLoss, MicroBatchesSumToTheMiniBatch) {
  for (const auto& c : loss_cases()) {
    auto loss = policy_loss_registry().make(c.first, c.second);
    Data d = random_data(99, 8, 6, /*experts=*/true);
    d.step = 3;
    set_minibatch_mask(*loss, d);
    std::vector<float> g_full(d.lp.size(), 0.0f);
    Metrics m_full;
    const double full = run(*loss, d, &g_full, &m_full);
    for (int64_t mbs : {1, 2, 3, 8}) {
      if (c.first == "dpo" && mbs % 2) continue;  // pairs stay whole
      Normalizer norm;
      for (int64_t b0 = 0; b0 < d.B; b0 += mbs) norm += Normalizer::of(d.batch(b0, std::min(mbs, d.B - b0)));
      double sum = 0;
      Metrics msum;
      std::vector<float> g(d.lp.size(), 0.0f);
      for (int64_t b0 = 0; b0 < d.B; b0 += mbs) {
        const int64_t nb = std::min(mbs, d.B - b0);
        Metrics mm;
        sum += loss->forward_backward(d.batch(b0, nb), norm,
                                      std::span<float>(g).subspan(static_cast<size_t>(b0 * d.T), static_cast<size_t>(nb * d.T)), mm);
        msum.merge(mm);
      }
      EXPECT_NEAR(sum, full, 1e-9 + 1e-9 * std::fabs(full)) << label(c) << " mbs=" << mbs;
      for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], g_full[i], 1e-7) << label(c) << " mbs=" << mbs;
      for (const auto& [k, e] : m_full.entries())
        EXPECT_NEAR(msum.get(k), e.value, 1e-9 + 1e-9 * std::fabs(e.value)) << label(c) << " metric " << k;
    }
  }
}

// One-token batch with the given advantage, current and old logprob.
Data one(double adv, double lp, double old) {
  Data d;
  d.B = 1, d.T = 1;
  d.lp = {static_cast<float>(lp)}, d.old = {static_cast<float>(old)}, d.ref = {static_cast<float>(lp)};
  d.adv = {static_cast<float>(adv)}, d.ent = {1.0f}, d.mask = {1.0f};
  return d;
}

TEST(PolicyLoss, PpoHandValuesAndClipZeros) {
  auto ppo = policy_loss_registry().make("ppo", {});
  struct Case {
    double adv, ratio, loss, grad;
    bool clip, lower;
  };
  const Case cases[] = {
      {1.0, 1.1, -1.1, -1.1, false, false},   // inside: −A·r, d = −A·r
      {1.0, 1.5, -1.2, 0.0, true, false},     // A>0, r > 1+ε: clipped, gradient exactly 0
      {1.0, 0.5, -0.5, -0.5, false, false},   // A>0, r < 1−ε: unclipped side wins
      {-1.0, 0.5, 0.8, 0.0, true, false},     // A<0, r < 1−ε: clipped, 0
      {-1.0, 2.0, 2.0, 2.0, false, false},    // A<0, r > 1+ε: −A·r, d = −A·r
      {-1.0, 4.0, 3.0, 0.0, false, true},     // dual clip: −A·c, 0
  };
  for (const auto& c : cases) {
    Data d = one(c.adv, std::log(c.ratio) - 1.0, -1.0);
    std::vector<float> g(1, 0.0f);
    Metrics m;
    EXPECT_NEAR(run(*ppo, d, &g, &m), c.loss, 1e-6) << c.adv << " " << c.ratio;
    if (c.grad == 0.0)
      EXPECT_EQ(g[0], 0.0f) << c.adv << " " << c.ratio;
    else
      EXPECT_NEAR(g[0], c.grad, 1e-6) << c.adv << " " << c.ratio;
    EXPECT_EQ(m.get("pg_clipfrac"), c.clip ? 1.0 : 0.0);
    EXPECT_EQ(m.get("pg_clipfrac_lower"), c.lower ? 1.0 : 0.0);
    EXPECT_NEAR(m.get("ppo_kl"), -std::log(c.ratio), 1e-6);
  }
  // log-ratio clamp at ±20: value exp(20)·(−A), gradient 0.
  Data d = one(1.0, -1.0 + 25.0, -1.0);
  auto isl = policy_loss_registry().make("importance_sampling", {});
  std::vector<float> g(1, 0.0f);
  EXPECT_NEAR(run(*isl, d, &g), -std::exp(20.0), 1e-3 * std::exp(20.0));
  EXPECT_EQ(g[0], 0.0f);
}

TEST(PolicyLoss, OtherLossesHandValues) {
  const double lp = std::log(1.5) - 1.0, old = -1.0;  // r = 1.5
  auto v = [&](const char* name, ArgMap a, double adv, double* grad) {
    auto l = policy_loss_registry().make(name, a);
    Data d = one(adv, lp, old);
    std::vector<float> g(1, 0.0f);
    const double val = run(*l, d, &g);
    *grad = g[0];
    return val;
  };
  double g;
  // cispo: −A·clip(r, 0, 1.28)·logp
  EXPECT_NEAR(v("cispo", {}, 2.0, &g), -2.0 * 1.28 * lp, 1e-6);
  EXPECT_NEAR(g, -2.0 * 1.28, 1e-6);
  // sapo: f = σ(τ(r−1))·4/τ with τ = 1 for A > 0
  const double f = 4.0 / (1.0 + std::exp(-0.5));
  EXPECT_NEAR(v("sapo", {}, 2.0, &g), -2.0 * f * lp, 1e-5);
  EXPECT_NEAR(g, -2.0 * f, 1e-5);
  // topr: A ≤ 0 → α = clamp(r, 0, 1) = 1; A = −1
  EXPECT_NEAR(v("topr", {}, -1.0, &g), lp, 1e-6);
  EXPECT_NEAR(g, 1.0, 1e-6);
  // opmd: −A·logp/(1+τ)
  EXPECT_NEAR(v("opmd", {{"tau", 3.0}}, 2.0, &g), -0.5 * lp, 1e-6);
  EXPECT_NEAR(g, -0.5, 1e-6);
  // sppo: r = 1.5 outside [1/1.3, 1.3]: zero loss and exactly zero gradient
  EXPECT_EQ(v("sppo", {}, 2.0, &g), 0.0);
  EXPECT_EQ(g, 0.0f);
  // cispo mask clip: r = 1.5 > 1.28 and A > 0 → masked, gradient exactly 0
  EXPECT_EQ(v("cispo", {{"enable_mask_clip", true}}, 2.0, &g), 0.0);
  EXPECT_EQ(g, 0.0f);
  // rec two-side: out of [0.8, 1.2] → 0; none → −A·logp
  v("rec", {{"clip_mode", "two-side"}}, 1.0, &g);
  EXPECT_EQ(g, 0.0f);
  EXPECT_NEAR(v("rec", {}, 1.0, &g), -lp, 1e-6);
  // sft family
  const double p = std::exp(lp);
  EXPECT_NEAR(v("sft", {}, 0.0, &g), -lp, 1e-6);
  EXPECT_NEAR(v("sft_is", {}, 0.0, &g), -lp * p, 1e-6);
  EXPECT_NEAR(g, -p, 1e-6);
  EXPECT_NEAR(v("sft_phi", {}, 0.0, &g), -lp * p * (1 - p), 1e-6);
  EXPECT_NEAR(g, -p * (1 - p), 1e-6);
  // sft_phi cutoff 0.3 < p = 0.55: logp clamped at log 0.3 → gradient 0
  EXPECT_NEAR(v("sft_phi", {{"cutoff_prob", 0.3}}, 0.0, &g), -std::log(0.3) * p * (1 - p), 1e-6);
  EXPECT_EQ(g, 0.0f);
}

TEST(PolicyLoss, GspoUsesTheSequenceRatio) {
  // One row, two tokens with log ratios 0.1 and 0.3: s = exp(0.2); A = 1, clip 0.3/0.5 → inside.
  Data d;
  d.B = 1, d.T = 2;
  d.old = {-1, -1}, d.lp = {-0.9f, -0.7f}, d.adv = {1, 1}, d.mask = {1, 1};
  auto l = policy_loss_registry().make("gspo", {{"clip_range_low", 0.3}, {"clip_range_high", 0.5}});
  std::vector<float> g(2, 0.0f);
  Metrics m;
  const double s = std::exp((static_cast<double>(d.lp[0]) + d.lp[1] + 2) / 2);
  EXPECT_NEAR(run(*l, d, &g, &m), -s, 1e-6);  // seq-mean-token-mean of −s
  EXPECT_NEAR(g[0], -s / 2, 1e-6);
  EXPECT_NEAR(g[1], -s / 2, 1e-6);
  EXPECT_NEAR(m.get("ppo_kl_seq"), -std::log(s), 1e-6);
  // Default clip (3e-4 / 4e-4): s = e^0.2 is clipped → value −A·1.0004 and gradient 0.
  auto tight = policy_loss_registry().make("gspo", {});
  std::vector<float> g2(2, 0.0f);
  EXPECT_NEAR(run(*tight, d, &g2), -1.0004, 1e-6);
  EXPECT_EQ(g2[0], 0.0f);
  EXPECT_EQ(g2[1], 0.0f);
  // clip_range alone sets both sides (the 3e-4/4e-4 defaults do not override it): inside ±0.3.
  auto wide = policy_loss_registry().make("gspo", {{"clip_range", 0.3}});
  EXPECT_NEAR(run(*wide, d), -s, 1e-6);
}

TEST(PolicyLoss, DpoPerPairHandValue) {
  // Pair: chosen Σ(logp − ref) = 1, rejected = −1 → Δ = 2, β = 0.1.
  Data d;
  d.B = 2, d.T = 2;
  d.lp = {-1.0f, -1.0f, -2.0f, 0.0f};
  d.ref = {-1.5f, -1.5f, -1.0f, 0.0f};
  d.mask = {1, 1, 1, 0};
  auto l = policy_loss_registry().make("dpo", {});
  std::vector<float> g(4, 0.0f);
  Metrics m;
  const double z = 0.2;
  EXPECT_NEAR(run(*l, d, &g, &m), std::log1p(std::exp(-z)), 1e-7);
  const double dz = -0.1 / (1 + std::exp(z));  // −β·σ(−z)
  EXPECT_NEAR(g[0], dz, 1e-7);
  EXPECT_NEAR(g[1], dz, 1e-7);
  EXPECT_NEAR(g[2], -dz, 1e-7);
  EXPECT_EQ(g[3], 0.0f);
  EXPECT_NEAR(m.get("chosen_reward"), 0.1, 1e-7);
  EXPECT_NEAR(m.get("rejected_reward"), -0.1, 1e-7);
  EXPECT_EQ(m.get("accuracy_mean"), 1.0);
  // Two pairs: the loss is the mean of per-pair losses (not one Δ over the micro-batch).
  Data d2;
  d2.B = 4, d2.T = 1;
  d2.lp = {0.0f, -1.0f, -1.0f, 0.0f};
  d2.ref = {0, 0, 0, 0};
  d2.mask = {1, 1, 1, 1};
  const double want = 0.5 * (std::log1p(std::exp(-0.1)) + std::log1p(std::exp(0.1)));
  EXPECT_NEAR(run(*l, d2), want, 1e-7);
  Data odd = random_data(1, 3, 2);
  EXPECT_THROW(run(*l, odd), ShapeError);
}

TEST(PolicyLoss, MixChordMuSchedule) {
  auto l = policy_loss_registry().make("mix_chord", {{"mu_warmup_steps", 2}, {"mu_decay_steps", 4},
                                                      {"mu_peak", 0.5}, {"mu_valley", 0.1}});
  Data d = random_data(5, 4, 3, true);
  for (auto [step, mu] : std::vector<std::pair<int64_t, double>>{{0, 0.0}, {1, 0.25}, {2, 0.5}, {4, 0.3}, {6, 0.1}, {50, 0.1}}) {
    d.step = step;
    Metrics m;
    run(*l, d, nullptr, &m);
    EXPECT_NEAR(m.get("mu"), mu, 1e-12) << "step " << step;
    EXPECT_NEAR(m.get("loss"), (1 - mu) * m.get("usual/pg_loss") + mu * m.get("expert/sft_phi_loss"), 1e-12);
  }
}

TEST(PolicyLoss, UnknownArgsAndValuesAreErrorsListingValidOnes) {
  try {
    policy_loss_registry().make("ppo", {{"clip_rnage", 0.1}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("clip_range_high"), std::string::npos) << e.what();
  }
  try {
    policy_loss_registry().make("no_such_loss", {});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("mix_chord"), std::string::npos) << e.what();
  }
  EXPECT_THROW(policy_loss_registry().make("rec", {{"clip_mode", "three-side"}}), ConfigError);
  EXPECT_THROW(policy_loss_registry().make("ppo", {{"clip_ratio_c", 0.5}}), ConfigError);
  EXPECT_THROW(policy_loss_registry().make("ppo", {{"clip_range", "wide"}}), ConfigError);
  EXPECT_THROW(policy_loss_registry().make("sapo", {{"tau_pos", 2.0}}), ConfigError);
}

}  // namespace
}  // namespace trinity::algo

#include "algorithm/value_loss.h"

namespace trinity::algo {
namespace {

TEST(ValueLoss, HandValuesClipAndFiniteDifferences) {
  // Token 0: V = 1.0, old 0.8, R = 2 → inside the clip: ½(1 − 2)² = 0.5, d = −1.
  // Token 1: V = 2.0, old 0.8 (clipped to 1.3), R = 0 → l1 = 4 > l2 = 1.69: unclipped, d = 2.
  // Token 2: V = 0.0, old 0.8 (clipped to 0.3), R = 2 → l2 = 2.89 < l1 = 4: unclipped.
  // Token 3: V = 2.0, old 0.8 → Vc = 1.3, R = 3: l2 = 2.89 > l1 = 1 → clipped, d = 0.
  std::vector<float> v = {1, 2, 0, 2}, old = {0.8f, 0.8f, 0.8f, 0.8f}, ret = {2, 0, 2, 3}, mask = {1, 1, 1, 1};
  ValueBatch vb{1, 4, v, old, ret, mask};
  TokenBatch tb;
  tb.B = 1, tb.T = 4, tb.mask = mask, tb.logprob = v;
  const Normalizer norm = Normalizer::of(tb);
  std::vector<float> g(4, 0.0f);
  Metrics m;
  const double loss = value_loss(vb, norm, AggMode::kTokenMean, 0.5, g, m);
  EXPECT_NEAR(loss, 0.5 * (1 + 4 + 4 + 2.89) / 4, 1e-6);
  EXPECT_NEAR(g[0], -1.0 / 4, 1e-6);
  EXPECT_NEAR(g[1], 2.0 / 4, 1e-6);
  EXPECT_EQ(g[3], 0.0f);
  EXPECT_NEAR(m.get("vf_clipfrac"), 0.25, 1e-12);
  // Finite differences at points away from the clip edges.
  test::Data d = test::random_data(5, 4, 5);
  std::vector<float> vals(d.lp.size()), olds(d.lp.size()), rets(d.lp.size());
  Rng rng(9);
  for (size_t i = 0; i < vals.size(); ++i) {
    olds[i] = static_cast<float>(rng.uniform());
    vals[i] = static_cast<float>(olds[i] + (rng.below(2) ? 0.2 : 0.9) * (rng.below(2) ? 1 : -1));
    rets[i] = static_cast<float>(2 * rng.uniform() - 0.5);
  }
  auto run_v = [&](std::span<float> grad) {
    Metrics mm;
    ValueBatch x{d.B, d.T, vals, olds, rets, d.mask};
    return value_loss(x, Normalizer::of(d.batch()), AggMode::kSeqMeanTokenMean, 0.5, grad, mm);
  };
  std::vector<float> gv(vals.size(), 0.0f);
  run_v(gv);
  test::expect_fd(d, vals, gv, [&] { return run_v({}); }, "value loss");
}

// Rollout-correction weights (TokenBatch::pg_weight) scale each token's term of the losses that take
// them: token i's gradient is w_i times the unweighted one, and a uniform weight k scales the loss by
// k. Losses that do not take them are refused by the trainer (PolicyLoss::takes_rollout_is).
TEST(RolloutIs, WeightsScaleEachTokenTermOfThePolicyLoss) {
  int tested = 0;
  for (const auto& name : policy_loss_registry().names()) {
    auto loss = policy_loss_registry().make(name, {});
    if (!loss->takes_rollout_is()) continue;
    ++tested;
    test::Data d = random_data(11, 4, 6);
    set_minibatch_mask(*loss, d);
    Rng rng(5);
    std::vector<float> w(d.lp.size());
    for (auto& x : w) x = static_cast<float>(0.2 + 1.5 * rng.uniform());
    auto run = [&](const std::vector<float>* weights, std::vector<float>& g) {
      TokenBatch mb = d.batch();
      if (weights) mb.pg_weight = *weights;
      Metrics m;
      g.assign(d.lp.size(), 0.0f);
      return loss->forward_backward(mb, Normalizer::of(d.batch()), g, m);
    };
    std::vector<float> g0, gw, gk;
    const double l0 = run(nullptr, g0);
    run(&w, gw);
    for (size_t i = 0; i < g0.size(); ++i)
      EXPECT_NEAR(gw[i], w[i] * g0[i], 1e-6 * std::max(1.0f, std::abs(g0[i]))) << name << " token " << i;
    const std::vector<float> k(d.lp.size(), 1.7f);
    EXPECT_NEAR(run(&k, gk), 1.7 * l0, 1e-6 * std::max(1.0, std::abs(l0))) << name;  // 1.7f: 6e-8 off
  }
  EXPECT_GE(tested, 7);
  EXPECT_FALSE(policy_loss_registry().make("sft", {})->takes_rollout_is());
  EXPECT_FALSE(policy_loss_registry().make("gspo", {})->takes_rollout_is());
}

}  // namespace
}  // namespace trinity::algo
