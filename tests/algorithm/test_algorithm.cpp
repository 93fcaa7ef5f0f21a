// Preset / Algorithm tests: every algorithm_type resolves with its documented components and flags,
// overrides by name and *_args, unknown names/keys/args are errors listing the valid ones, the
// loss_agg_mode precedence, the KL-penalty rule, JSON spec parsing, and the full actor loss
// (policy + KL + entropy) against finite differences and exact micro-batch splitting.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithm/algorithm.h"
#include "algorithm/minibatch.h"
#include "test_util.h"

namespace trinity::algo {
namespace {

AlgorithmSpec spec_of(const std::string& type) {
  AlgorithmSpec s;
  s.algorithm_type = type;
  if (type == "dapo") s.advantage_fn_args = {{"max_response_tokens", 64}, {"overlong_buffer_len", 16}};
  return s;
}

AlgorithmSpec bare(const std::string& type) {
  AlgorithmSpec s;
  s.algorithm_type = type;
  return s;
}

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Preset, EveryAlgorithmTypeResolves) {
  const std::vector<std::string> expected = {"ppo",
                                             "grpo",
                                             "grpo_verl",
                                             "dapo",
                                             "gigpo",
                                             "multi_step_grpo",
                                             "reinforceplusplus",
                                             "rloo",
                                             "opmd",
                                             "asymre",
                                             "sppo",
                                             "rec",
                                             "topr",
                                             "cispo",
                                             "gspo",
                                             "sapo",
                                             "m2po",
                                             "mix",
                                             "mix_chord",
                                             "raft",
                                             "sft",
                                             "dpo",
                                             "on_policy_distill",
                                             "jsd"};
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  EXPECT_EQ(names, expected);
  for (const auto& n : names) {
    Algorithm a(spec_of(n));
    EXPECT_EQ(a.type(), n);
    EXPECT_FALSE(a.describe().empty());
  }
}

TEST(Preset, ComponentsAndFlagsMatchTrinity) {
  struct Row {
    const char* type;
    int64_t repeat;
    const char* adv;
    const char* pl;
    AdvLocation loc;
    bool ref, critic;
  };
  using L = AdvLocation;
  const Row rows[] = {
      {"ppo", 1, "ppo", "ppo", L::kTrainer, true, true},
      {"grpo", 2, "grpo", "ppo", L::kExplorer, true, false},
      {"grpo_verl", 2, "grpo_verl", "ppo", L::kTrainer, true, false},  // grpo_verl, not grouped grpo ([obs])
      {"dapo", 16, "dapo", "ppo", L::kExplorer, false, false},
      {"gigpo", 8, "gigpo", "ppo", L::kExplorer, true, false},
      {"multi_step_grpo", 8, "step_wise_grpo", "ppo", L::kExplorer, true, false},
      {"reinforceplusplus", 2, "reinforceplusplus", "ppo", L::kTrainer, true, false},
      {"rloo", 2, "rloo", "ppo", L::kTrainer, true, false},
      {"opmd", 2, "opmd", "opmd", L::kExplorer, true, false},
      {"asymre", 2, "asymre", "opmd", L::kExplorer, false, false},
      {"sppo", 2, "opmd", "sppo", L::kExplorer, false, false},
      {"rec", 2, "rec", "rec", L::kExplorer, true, false},
      {"topr", 2, "reinforce", "topr", L::kExplorer, true, false},
      {"cispo", 2, "grpo", "cispo", L::kExplorer, true, false},
      {"gspo", 2, "grpo", "gspo", L::kExplorer, true, false},
      {"sapo", 2, "grpo", "sapo", L::kExplorer, true, false},
      {"m2po", 8, "grpo", "m2po", L::kExplorer, false, false},
      {"mix", 8, "grpo", "mix", L::kExplorer, true, false},
      {"mix_chord", 8, "grpo", "mix_chord", L::kExplorer, true, false},
      {"raft", 1, "", "sft", L::kNone, false, false},
      {"sft", 1, "", "sft", L::kNone, false, false},
      {"dpo", 2, "", "dpo", L::kNone, true, false},
      {"on_policy_distill", 8, "on_policy_distill", "ppo", L::kTrainer, false, false},
      {"jsd", 8, "jsd", "ppo", L::kTrainer, false, false},
  };
  for (const auto& r : rows) {
    Algorithm a(spec_of(r.type));
    EXPECT_EQ(a.repeat_times(), r.repeat) << r.type;
    EXPECT_EQ(a.advantage_fn_name(), r.adv) << r.type;
    EXPECT_EQ(a.policy_loss_fn_name(), r.pl) << r.type;
    EXPECT_EQ(a.advantage_location(), r.loc) << r.type;
    EXPECT_EQ(a.use_reference(), r.ref) << r.type;
    EXPECT_EQ(a.use_critic(), r.critic) << r.type;
  }
  EXPECT_EQ(Algorithm(spec_of("sft")).schema(), Schema::kSft);
  EXPECT_EQ(Algorithm(spec_of("dpo")).schema(), Schema::kDpo);
  EXPECT_EQ(Algorithm(spec_of("mix")).sample_strategy().name, "mix");
  EXPECT_EQ(Algorithm(spec_of("mix")).entropy().kind(), EntropyKind::kMix);
  EXPECT_TRUE(Algorithm(spec_of("dapo")).kl_loss().is_none());
  EXPECT_EQ(Algorithm(spec_of("grpo")).kl_loss().kind(), KlKind::kK2);
  EXPECT_NEAR(Algorithm(spec_of("grpo")).kl_loss().coef(), 0.001, 1e-15);
}

TEST(Preset, DapoUsesClipHigher) {
  Algorithm a(spec_of("dapo"));
  // A > 0, r = 1.25: inside [0.8, 1.28] → unclipped with clip-higher (would be clipped at 1.2).
  test::Data d;
  d.B = 1, d.T = 1, d.lp = {static_cast<float>(std::log(1.25))}, d.old = {0}, d.adv = {1}, d.mask = {1};
  const auto out = a.actor_loss(d.batch(), Normalizer::of(d.batch()));
  EXPECT_NEAR(out.loss, -1.25, 1e-6);
  EXPECT_NEAR(out.dlogprob[0], -1.25, 1e-6);
  // A user's clip_range replaces the preset's per-side values: r = 1.25 is now clipped at 1.2.
  AlgorithmSpec sym = spec_of("dapo");
  sym.policy_loss_fn_args = {{"clip_range", 0.2}};
  EXPECT_EQ(Algorithm(sym).actor_loss(d.batch(), Normalizer::of(d.batch())).dlogprob[0], 0.0f);
  EXPECT_NE(what_of([] { Algorithm x(bare("dapo")); }).find("max_response_tokens"),
            std::string::npos);
}

// M2PO through the trainer's mini-batch glue: rows [b0, b1) of d as micro-batches of `mbs` rows.
struct M2poRun {
  MiniBatchLoss ml;
  std::vector<float> dlogprob;
};
M2poRun run_m2po(const Algorithm& a, const test::Data& d, int64_t mbs) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t b0 = 0; b0 < d.B; b0 += mbs) ranges.emplace_back(b0, std::min(d.B, b0 + mbs));
  M2poRun r;
  r.dlogprob.assign(static_cast<size_t>(d.B * d.T), 0.0f);
  r.ml = minibatch_actor_loss(
      a, ranges, 0, [&](int64_t b0, int64_t b1, bool) { return d.batch(b0, b1 - b0); },
      [&](int64_t b0, int64_t, const LossOutput& lo) {
        std::copy(lo.dlogprob.begin(), lo.dlogprob.end(), r.dlogprob.begin() + b0 * d.T);
      });
  return r;
}

test::Data m2po_data(std::vector<float> lr, std::vector<float> adv, int64_t B) {
  test::Data d;
  d.B = B, d.T = static_cast<int64_t>(lr.size()) / B;
  d.lp = lr, d.old.assign(lr.size(), 0.0f), d.adv = std::move(adv), d.mask.assign(lr.size(), 1.0f);
  return d;
}

TEST(Preset, M2poMasksTheLargestTrustRegionTokensOfTheMiniBatch) {
  AlgorithmSpec s = spec_of("m2po");
  Algorithm a(s);
  EXPECT_TRUE(a.kl_loss().is_none());
  EXPECT_EQ(a.entropy().kind(), EntropyKind::kNone);
  // lr = (0.1, 0.2, 0.3), A = 1: mean lr² = 0.0467 > 0.04; dropping 0.3 leaves 0.025.
  auto d = m2po_data({0.1f, 0.2f, 0.3f}, {1, 1, 1}, 1);
  auto r = run_m2po(a, d, 1);
  const double e1 = std::exp(static_cast<double>(0.1f)), e2 = std::exp(static_cast<double>(0.2f));
  EXPECT_NEAR(r.ml.loss, -(e1 + e2) / 3, 1e-6);  // the denominator counts the dropped token too
  EXPECT_NEAR(r.dlogprob[0], -e1 / 3, 1e-6);
  EXPECT_EQ(r.dlogprob[2], 0.0f);
  EXPECT_NEAR(r.ml.metrics.get("actor/m2po/m2_before"), (0.01 + 0.04 + 0.09) / 3, 1e-6);
  EXPECT_NEAR(r.ml.metrics.get("actor/m2po/m2_after"), 0.025, 1e-6);
  EXPECT_NEAR(r.ml.metrics.get("actor/m2po/masked_fraction"), 1.0 / 3, 1e-12);
  // Only the PPO-clip quadrants are constrained: (A < 0, lr > 0) and (A > 0, lr < 0) stay.
  s.policy_loss_fn_args = {{"m2_threshold", 0.1}};
  d = m2po_data({1, -1, 1, -1}, {-1, 1, 1, -1}, 1);
  r = run_m2po(Algorithm(s), d, 1);
  EXPECT_NE(r.dlogprob[0], 0.0f);
  EXPECT_NE(r.dlogprob[1], 0.0f);
  EXPECT_EQ(r.dlogprob[2], 0.0f);
  EXPECT_EQ(r.dlogprob[3], 0.0f);
  // One mask over the mini-batch however it is split: lr² = (0.01, 0.09, 0.05) in three rows drops
  // only 0.09 (a per-micro-batch mask would keep it alone, or drop 0.05 too).
  d = m2po_data({0.1f, 0.3f, std::sqrt(0.05f)}, {1, 1, 1}, 3);
  for (int64_t mbs : {1, 2, 3}) {
    r = run_m2po(a, d, mbs);
    EXPECT_NE(r.dlogprob[0], 0.0f) << mbs;
    EXPECT_EQ(r.dlogprob[1], 0.0f) << mbs;
    EXPECT_NE(r.dlogprob[2], 0.0f) << mbs;
  }
  // The forward clamp keeps the gradient (straight-through): lr = 25 → value and gradient e^20.
  d = m2po_data({25}, {-1}, 1);
  r = run_m2po(a, d, 1);
  EXPECT_NEAR(r.ml.loss / std::exp(20.0), 1.0, 1e-5);
  EXPECT_NEAR(r.dlogprob[0] / std::exp(20.0), 1.0, 1e-5);
  // Without the mini-batch pre-pass the loss refuses to run; bad args name themselves.
  try {
    a.actor_loss(d.batch(), Normalizer::of(d.batch()));
    ADD_FAILURE() << "m2po ran without its mini-batch mask";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("minibatch_actor_loss"), std::string::npos) << e.what();
  }
  for (const auto& [key, val] : std::vector<std::pair<std::string, ArgValue>>{
           {"m2_threshold", -0.01}, {"log_ratio_clip", 0.0}, {"loss_agg_mode", "seq-mean-token-mean"}}) {
    AlgorithmSpec b = spec_of("m2po");
    b.policy_loss_fn_args = {{key, val}};
    EXPECT_NE(what_of([&] { Algorithm x(b); }).find(key), std::string::npos) << key;
  }
  AlgorithmSpec agg = spec_of("m2po");
  agg.loss_agg_mode = "seq-mean-token-sum";  // algorithm.loss_agg_mode reaches the loss too
  EXPECT_NE(what_of([&] { Algorithm x(agg); }).find("token-mean"), std::string::npos);
}

TEST(Preset, OverridesAndErrors) {
  AlgorithmSpec s = spec_of("grpo");
  s.policy_loss_fn = "gspo";
  s.kl_loss_fn = "low_var_kl";
  s.kl_loss_fn_args = {{"kl_coef", 0.05}};
  s.entropy_loss_fn_args = {{"entropy_coef", 0.01}};
  s.repeat_times = 16;
  Algorithm a(s);
  EXPECT_EQ(a.policy_loss_fn_name(), "gspo");
  EXPECT_EQ(a.kl_loss().kind(), KlKind::kLowVarKl);
  EXPECT_NEAR(a.kl_loss().coef(), 0.05, 1e-15);
  EXPECT_NEAR(a.entropy().coef(), 0.01, 1e-15);
  EXPECT_EQ(a.repeat_times(), 16);
  // dpo's repeat_times is forced to 2.
  AlgorithmSpec d = spec_of("dpo");
  d.repeat_times = 5;
  EXPECT_EQ(Algorithm(d).repeat_times(), 2);

  EXPECT_NE(what_of([] { Algorithm x(bare("grpoo")); }).find("mix_chord"), std::string::npos);
  AlgorithmSpec bad_loss = spec_of("grpo");
  bad_loss.policy_loss_fn = "ppo2";
  EXPECT_NE(what_of([&] { Algorithm x(bad_loss); }).find("valid names are"), std::string::npos);
  AlgorithmSpec bad_arg = spec_of("grpo");
  bad_arg.kl_loss_fn_args = {{"coef", 0.1}};
  EXPECT_NE(what_of([&] { Algorithm x(bad_arg); }).find("kl_coef"), std::string::npos);
  // Every name and argument the user types gets the same did-you-mean (core/names.h).
  EXPECT_NE(what_of([] { Algorithm x(bare("grpoo")); }).find("unknown (did you mean 'grpo'?)"), std::string::npos);
  EXPECT_NE(what_of([&] { Algorithm x(bad_loss); }).find("unknown (did you mean 'ppo'?)"), std::string::npos);
  AlgorithmSpec typo_arg = spec_of("grpo");
  typo_arg.kl_loss_fn_args = {{"kl_coeff", 0.1}};
  EXPECT_NE(what_of([&] { Algorithm x(typo_arg); }).find("unknown argument 'kl_coeff' (did you mean 'kl_coef'?)"),
            std::string::npos);
  AlgorithmSpec bad_adv = spec_of("sft");
  bad_adv.advantage_fn_args = {{"epsilon", 0.1}};
  EXPECT_THROW(Algorithm x(bad_adv), ConfigError);
  AlgorithmSpec key;
  EXPECT_NE(what_of([&] { key.set("polic_loss_fn", ArgValue("ppo")); }).find("did you mean 'policy_loss_fn'"),
            std::string::npos);
  EXPECT_THROW(key.set("repeat_times", ArgValue(0)), ConfigError);
  EXPECT_THROW(key.set("kl_loss_fn", ArgValue(3)), ConfigError);
  EXPECT_THROW(key.set_map("algorithm_type", {}), ConfigError);
}

TEST(Preset, LossAggModePrecedence) {
  auto agg_of = [](AlgorithmSpec s) {
    Algorithm a(s);
    // seq-mean-token-mean vs token-mean differ on rows of unequal length.
    test::Data d;
    d.B = 2, d.T = 2, d.lp = {-1, -1, -3, 0}, d.old = d.lp, d.adv = {1, 1, 1, 1}, d.mask = {1, 1, 1, 0};
    d.ref = d.lp;
    return a.actor_loss(d.batch(), Normalizer::of(d.batch())).loss;
  };
  // ppo loss at r = 1: −A·1 per token, so every mode gives −1 ... use sft instead (value = −logp).
  AlgorithmSpec s = spec_of("sft");
  const double token_mean = (1 + 1 + 3) / 3.0, seq_mean = (1 + 3) / 2.0;
  EXPECT_NEAR(agg_of(s), token_mean, 1e-9);
  s.loss_agg_mode = "seq-mean-token-mean";
  EXPECT_NEAR(agg_of(s), seq_mean, 1e-9);
  s.policy_loss_fn_args = {{"loss_agg_mode", "token-mean"}};  // explicit policy arg wins
  EXPECT_NEAR(agg_of(s), token_mean, 1e-9);
  EXPECT_THROW(agg_of([] {
                 AlgorithmSpec t = spec_of("sft");
                 t.loss_agg_mode = "mean";
                 return t;
               }()),
               ConfigError);
}

TEST(Preset, KlPenaltyNeedsTrainerSideAdvantages) {
  AlgorithmSpec s = spec_of("grpo");
  s.kl_penalty_fn = "k1";
  EXPECT_NE(what_of([&] { Algorithm a(s); }).find("kl_loss_fn"), std::string::npos);
  AlgorithmSpec r = spec_of("reinforceplusplus");
  r.kl_penalty_fn = "k1";
  r.kl_penalty_fn_args = {{"kl_coef", 0.5}};
  Algorithm a(r);
  EXPECT_TRUE(a.use_reference());
  // Penalty applied before the advantage: rewards 1 and 1 with KL 0 and 0.4 → distinct advantages.
  std::vector<float> rewards = {1, 1}, mask = {1, 1}, old = {-1, -1}, ref = {-1, -1.4f};
  std::vector<std::string> group = {"g", "g"};
  AdvInput in;
  in.B = 2, in.T = 1, in.rewards = rewards, in.mask = mask, in.old_logprob = old, in.ref_logprob = ref, in.group = group;
  Rng rng(0);
  auto out = a.compute_advantages(in, rng);
  EXPECT_NEAR(out.returns[1], 1 - 0.5 * 0.4, 1e-6);
  EXPECT_NEAR(out.metrics.get("critic/kl"), 0.2, 1e-6);
  EXPECT_GT(out.advantages[0], out.advantages[1]);
}

TEST(Preset, JsonSpec) {
  AlgorithmSpec s = algorithm_spec_from_json(R"({"algorithm_type": "grpo", "repeat_times": 4,
      "policy_loss_fn_args": {"clip_range_high": 0.28, "clip_range_low": null},
      "optimizer": {"lr": 1e-6, "betas": [0.9, 0.999]}, "kl_loss_fn_args": null})");
  EXPECT_EQ(s.algorithm_type, "grpo");
  EXPECT_EQ(*s.repeat_times, 4);
  EXPECT_EQ(s.policy_loss_fn_args.at("clip_range_high").repr(), "0.28");
  EXPECT_TRUE(s.policy_loss_fn_args.at("clip_range_low").is_null());
  Algorithm a(s);
  EXPECT_EQ(a.repeat_times(), 4);
  EXPECT_THROW(algorithm_spec_from_json(R"({"algorithm_typ": "grpo"})"), ConfigError);
  EXPECT_THROW(algorithm_spec_from_json(R"({"policy_loss_fn_args": {"clip_range": [1, 2]}})"), ConfigError);
  EXPECT_THROW(algorithm_spec_from_json("{"), ConfigError);
}

TEST(Preset, SampleStrategies) {
  AlgorithmSpec s = spec_of("grpo");
  s.sample_strategy = "staleness_control";
  s.sample_strategy_args = {{"max_staleness", 2}};
  Algorithm a(s);
  EXPECT_EQ(a.sample_strategy().min_model_version(10), 8);
  EXPECT_EQ(a.sample_strategy().min_model_version(1), 0);
  Algorithm m(spec_of("mix"));
  EXPECT_EQ(m.sample_strategy().expert_batch_size(9), 5);  // ceil(0.5·9)
  s.sample_strategy = "warmup";
  s.sample_strategy_args = {};
  EXPECT_EQ(Algorithm(s).sample_strategy().name, "default");
}

// Full actor loss (policy + KL + entropy) for every experience-schema preset: finite differences
// for presets whose losses have no stop-gradient, exact micro-batch splitting for all.
TEST(Algorithm, ActorLossGradientsAndMicroBatches) {
  for (const auto& p : presets()) {
    AlgorithmSpec s = spec_of(p.name);
    s.entropy_loss_fn_args = {{"entropy_coef", 0.02}};
    if (p.kl_loss_fn != "none") s.kl_loss_fn_args = {{"kl_coef", 0.1}};
    Algorithm a(s);
    test::Data d = test::random_data(123, 6, 5, /*experts=*/true);
    d.step = 2;
    if (a.policy_loss().needs_minibatch_mask()) {  // m2po: the mask is fixed data for the gradient
      Metrics mm;
      d.keep = a.policy_loss().minibatch_mask(d.batch(), mm);
      EXPECT_GT(mm.get("m2po/masked_fraction"), 0.0) << p.name;  // the check covers dropped tokens
    }
    const Normalizer full_norm = Normalizer::of(d.batch());
    const LossOutput full = a.actor_loss(d.batch(), full_norm);
    EXPECT_TRUE(std::isfinite(full.loss)) << p.name;
    EXPECT_NEAR(full.metrics.get("actor/final_loss"), full.loss, 1e-12);
    const bool sg = p.policy_loss_fn == "cispo" || p.policy_loss_fn == "sapo" || p.policy_loss_fn == "topr" ||
                    p.policy_loss_fn == "gspo" || p.policy_loss_fn == "mix_chord";
    if (!sg) {
      test::expect_fd(d, d.lp, full.dlogprob, [&] { return a.actor_loss(d.batch(), full_norm).loss; },
                      "actor loss dlogprob " + p.name);
    }
    if (p.entropy_loss_fn != "none") {
      test::expect_fd(d, d.ent, full.dentropy, [&] { return a.actor_loss(d.batch(), full_norm).loss; },
                      "actor loss dentropy " + p.name);
    } else {
      for (float g : full.dentropy) EXPECT_EQ(g, 0.0f);
    }
    const int64_t mbs = 2;
    Normalizer norm;
    for (int64_t b0 = 0; b0 < d.B; b0 += mbs) norm += Normalizer::of(d.batch(b0, mbs));
    double sum = 0;
    for (int64_t b0 = 0; b0 < d.B; b0 += mbs) {
      const LossOutput o = a.actor_loss(d.batch(b0, mbs), norm);
      sum += o.loss;
      for (size_t i = 0; i < o.dlogprob.size(); ++i)
        EXPECT_NEAR(o.dlogprob[i], full.dlogprob[static_cast<size_t>(b0 * d.T) + i], 1e-7) << p.name;
    }
    EXPECT_NEAR(sum, full.loss, 1e-9) << p.name;
  }
}

TEST(Algorithm, AdvantagesForAlgorithmsWithoutOne) {
  Algorithm a(spec_of("sft"));
  std::vector<float> rewards = {0, 0}, mask = {1, 1, 1, 0};
  AdvInput in;
  in.B = 2, in.T = 2, in.rewards = rewards, in.mask = mask;
  Rng rng(0);
  auto out = a.compute_advantages(in, rng);
  EXPECT_EQ(out.rows, (std::vector<int64_t>{0, 1}));
  for (float x : out.advantages) EXPECT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace trinity::algo
