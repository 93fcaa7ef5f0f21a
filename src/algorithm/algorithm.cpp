// Algorithm resolution (preset + user overrides -> components) and the batch operations; see
// algorithm.h.
#include "algorithm/algorithm.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace trinity::algo {

namespace {

// Resolves args (preset args, then user args, over the entry's defaults) and builds the component.
template <class T>
std::unique_ptr<T> build(const Registry<T>& reg, const std::string& name, ArgMap args, const ArgMap& user,
                         std::vector<std::pair<std::string, Args>>& record) {
  const auto& e = reg.entry(name);
  for (const auto& [k, v] : user) args[k] = v;
  Args a = Args::resolve(strcat(reg.kind(), "_args of ", name), e.args, args);
  auto obj = e.make(a);
  record.emplace_back(strcat(reg.kind(), " ", name), a);
  return obj;
}

bool declares(const ArgSpec& spec, const std::string& key) {
  return std::any_of(spec.begin(), spec.end(), [&](const ArgDef& d) { return d.name == key; });
}

}  // namespace

Algorithm::Algorithm(const AlgorithmSpec& s) : preset_(&find_preset(s.algorithm_type)) {
  const Preset& p = *preset_;
  repeat_times_ = p.repeat_forced ? p.repeat_times : s.repeat_times.value_or(p.repeat_times);
  agg_ = parse_agg_mode(s.loss_agg_mode.value_or("token-mean"), "algorithm");

  adv_name_ = s.advantage_fn.value_or(p.advantage_fn);
  if (adv_name_ == "none") adv_name_.clear();
  if (!adv_name_.empty())
    adv_ = build(advantage_registry(), adv_name_, adv_name_ == p.advantage_fn ? p.advantage_fn_args : ArgMap{},
                 s.advantage_fn_args, resolved_args_);
  else if (!s.advantage_fn_args.empty())
    throw ConfigError("algorithm", "advantage_fn_args given but the algorithm has no advantage_fn");
  location_ = !adv_ ? AdvLocation::kNone : adv_->trainer_side() ? AdvLocation::kTrainer : AdvLocation::kExplorer;

  pl_name_ = s.policy_loss_fn.value_or(p.policy_loss_fn);
  ArgMap pa = pl_name_ == p.policy_loss_fn ? p.policy_loss_fn_args : ArgMap{};
  if (s.policy_loss_fn_args.count("clip_range"))  // a user's symmetric clip beats the preset's sides
    for (const char* side : {"clip_range_low", "clip_range_high"})
      if (!s.policy_loss_fn_args.count(side)) pa.erase(side);
  if (s.loss_agg_mode && declares(policy_loss_registry().entry(pl_name_).args, "loss_agg_mode"))
    pa["loss_agg_mode"] = *s.loss_agg_mode;  // user's policy_loss_fn_args.loss_agg_mode still wins
  pl_ = build(policy_loss_registry(), pl_name_, pa, s.policy_loss_fn_args, resolved_args_);

  klp_name_ = s.kl_penalty_fn.value_or(p.kl_penalty_fn);
  kl_penalty_ = build(kl_registry(), klp_name_, {}, s.kl_penalty_fn_args, resolved_args_);
  if (!kl_penalty_->is_none() && location_ != AdvLocation::kTrainer)
    throw ConfigError("algorithm",
                      strcat("kl_penalty_fn \"", klp_name_, "\" folds KL into token rewards, but advantage_fn \"",
                             adv_name_.empty() ? "none" : adv_name_,
                             "\" does not read token rewards (only ppo, reinforceplusplus and rloo do); use "
                             "kl_loss_fn instead (Trinity silently ignores it here)"));
  kll_name_ = s.kl_loss_fn.value_or(p.kl_loss_fn);
  kl_loss_ = build(kl_registry(), kll_name_, {}, s.kl_loss_fn_args, resolved_args_);
  ent_name_ = s.entropy_loss_fn.value_or(p.entropy_loss_fn);
  entropy_ = build(entropy_registry(), ent_name_, {}, s.entropy_loss_fn_args, resolved_args_);
  ss_name_ = s.sample_strategy.value_or(p.sample_strategy);
  sample_ = build(sample_strategy_registry(), ss_name_, {}, s.sample_strategy_args, resolved_args_);
}

bool Algorithm::use_reference() const {
  return !kl_loss_->is_none() || !kl_penalty_->is_none() || (pl_->needs() & kNeedRefLogprob);
}

bool Algorithm::use_critic() const { return adv_ && (adv_->needs() & kAdvNeedValues); }

unsigned Algorithm::loss_needs() const {
  return pl_->needs() | (kl_loss_->is_none() ? 0u : kNeedRefLogprob);
}

AdvOutput Algorithm::compute_advantages(const AdvInput& in0, Rng& rng) {
  in0.validate("advantages", 0);
  AdvInput in = in0;
  Metrics pen;
  std::vector<float> tr, rs;
  if (!kl_penalty_->is_none()) {
    const auto t = adv_detail::token_rewards(in);
    tr.assign(t.begin(), t.end());
    kl_penalty_->apply_penalty(tr, in.old_logprob, in.ref_logprob, in.mask, in.B, in.T, pen);
    rs.assign(static_cast<size_t>(in.B), 0.0f);
    for (int64_t b = 0; b < in.B; ++b) {
      double s = 0;
      for (int64_t t2 = 0; t2 < in.T; ++t2) s += tr[in.at(b, t2)];
      rs[static_cast<size_t>(b)] = static_cast<float>(s);
    }
    in.token_rewards = tr, in.rewards = rs;
  }
  AdvOutput out;
  if (adv_) {
    AdvOutput a = adv_->compute(in, rng);
    out = std::move(a);
    Metrics m;
    m.merge(out.metrics, location_ == AdvLocation::kExplorer ? "experience_pipeline/" : "");
    out.metrics = m;
  } else {
    out = adv_detail::make_output(in);
    std::fill(out.keep.begin(), out.keep.end(), 1);
    adv_detail::finish_rows(out);
  }
  out.metrics.merge(pen, "critic/");
  std::vector<double> score(in0.rewards.begin(), in0.rewards.end());
  adv_detail::add_stats(out.metrics, "critic/score", score);
  if (!kl_penalty_->is_none())
    adv_detail::add_stats(out.metrics, "critic/rewards", std::vector<double>(rs.begin(), rs.end()));
  std::vector<double> av, rv;
  for (int64_t b = 0; b < in.B; ++b) {
    if (!out.keep[static_cast<size_t>(b)]) continue;
    for (int64_t t = 0; t < in.T; ++t)
      if (in.mask[in.at(b, t)] != 0) av.push_back(out.advantages[in.at(b, t)]), rv.push_back(out.returns[in.at(b, t)]);
  }
  adv_detail::add_stats(out.metrics, "critic/advantages", av);
  adv_detail::add_stats(out.metrics, "critic/returns", rv);
  return out;
}

LossOutput Algorithm::actor_loss(const TokenBatch& mb, const Normalizer& norm) const {
  mb.validate("actor loss", loss_needs());
  LossOutput out;
  const size_t n = static_cast<size_t>(mb.B * mb.T);
  out.dlogprob.assign(n, 0.0f);
  out.dentropy.assign(n, 0.0f);
  Metrics pm, em, km;
  const double pl = pl_->forward_backward(mb, norm, out.dlogprob, pm);
  TokenBatch plain = mb;  // rollout-correction weights apply to the policy loss only
  plain.pg_weight = {};
  const double ent = entropy_->loss(plain, norm, agg_, out.dentropy, em);
  const double kl = kl_loss_->loss(plain, norm, agg_, out.dlogprob, km);
  out.metrics.merge(pm, "actor/");
  if (!pm.has("pg_loss")) out.metrics.add("actor/pg_loss", pl);
  out.metrics.merge(em, "actor/");
  out.metrics.merge(km, "actor/");
  if (!mb.entropy.empty())
    out.metrics.add("actor/entropy", token_mean_metric(mb, norm, Rows::kAll, [&](int64_t b, int64_t t) {
                      return static_cast<double>(mb.entropy[mb.at(b, t)]);
                    }));
  out.loss = pl + ent + kl;
  out.metrics.add("actor/final_loss", out.loss);
  return out;
}

std::string Algorithm::describe() const {
  std::ostringstream os;
  os << "algorithm_type: " << type() << "\nrepeat_times: " << repeat_times_
     << "\nloss_agg_mode: " << agg_mode_name(agg_) << "\nadvantage_location: "
     << (location_ == AdvLocation::kNone ? "none" : location_ == AdvLocation::kTrainer ? "trainer" : "explorer")
     << "\nuse_reference: " << (use_reference() ? "true" : "false")
     << "\nuse_critic: " << (use_critic() ? "true" : "false") << "\n";
  for (const auto& [what, a] : resolved_args_) {
    os << what << ":";
    for (const auto& [k, v] : a.values()) os << " " << k << "=" << v.repr();
    os << "\n";
  }
  return os.str();
}

}  // namespace trinity::algo
