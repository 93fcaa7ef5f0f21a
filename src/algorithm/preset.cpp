// The preset table (Trinity-RFT's ALGORITHM_TYPE registry plus dapo, gigpo and m2po) and AlgorithmSpec
// key handling; see preset.h and docs/algorithms.md.
#include "algorithm/preset.h"

#include <algorithm>

#include "core/error.h"

namespace trinity::algo {

namespace {

Preset P(std::string name, std::string doc, int64_t repeat, std::string adv, std::string pl,
         AdvLocation loc = AdvLocation::kExplorer) {
  Preset p;
  p.name = std::move(name), p.doc = std::move(doc), p.repeat_times = repeat;
  p.advantage_fn = std::move(adv), p.policy_loss_fn = std::move(pl), p.location = loc;
  return p;
}

std::vector<Preset> build() {
  using L = AdvLocation;
  std::vector<Preset> v;
  v.push_back(P("ppo", "PPO with a critic and GAE (arXiv 1707.06347)", 1, "ppo", "ppo", L::kTrainer));
  v.push_back(P("grpo", "GRPO: group-normalised rewards, clipped surrogate (arXiv 2402.03300)", 2, "grpo", "ppo"));
  // Trinity-RFT's deprecated trainer-side GRPO. Its default_config names the grouped `grpo`
  // advantage, which cannot run on the trainer's batch, so users had to set a DataProto function
  // ([obs], reference §3.1); here the default is the DataProto one, `grpo_verl`.
  v.push_back(P("grpo_verl", "GRPO with advantages computed in the trainer (deprecated in Trinity-RFT)", 2, "grpo_verl",
                "ppo", L::kTrainer));
  {
    Preset p = P("dapo", "DAPO: clip-higher, dynamic sampling, overlong shaping, token-mean (arXiv 2503.14476)",
                 16, "dapo", "ppo");
    p.policy_loss_fn_args = {{"clip_range_low", 0.2}, {"clip_range_high", 0.28}};
    p.kl_loss_fn = "none";
    v.push_back(p);
  }
  v.push_back(P("gigpo", "GiGPO: episode + anchor-state step advantages (arXiv 2505.10978)", 8, "gigpo", "ppo"));
  v.push_back(P("multi_step_grpo", "GRPO over multi-step runs (last-step reward)", 8, "step_wise_grpo", "ppo"));
  v.push_back(P("reinforceplusplus", "REINFORCE++ (arXiv 2501.03262)", 2, "reinforceplusplus", "ppo", L::kTrainer));
  v.push_back(P("rloo", "REINFORCE leave-one-out (arXiv 2402.14740)", 2, "rloo", "ppo", L::kTrainer));
  v.push_back(P("opmd", "on-policy mirror descent (Trinity-RFT, arXiv 2505.17826)", 2, "opmd", "opmd"));
  {
    Preset p = P("asymre", "asymmetric REINFORCE (arXiv 2506.20520)", 2, "asymre", "opmd");
    p.kl_loss_fn = "none", p.entropy_loss_fn = "none";
    v.push_back(p);
  }
  {
    Preset p = P("sppo", "SPPO-style ratio-band policy gradient", 2, "opmd", "sppo");
    p.kl_loss_fn = "none", p.entropy_loss_fn = "none";
    v.push_back(p);
  }
  v.push_back(P("rec", "REC: REINFORCE with clipping/weighting variants (arXiv 2509.24203)", 2, "rec", "rec"));
  v.push_back(P("topr", "tapered off-policy REINFORCE (arXiv 2503.14286)", 2, "reinforce", "topr"));
  v.push_back(P("cispo", "CISPO: clipped IS-weight policy gradient (MiniMax-M1, arXiv 2506.13585)", 2, "grpo", "cispo"));
  v.push_back(P("gspo", "GSPO: sequence-level ratio (arXiv 2507.18071)", 2, "grpo", "gspo"));
  v.push_back(P("sapo", "SAPO: soft adaptive gate (arXiv 2511.20347)", 2, "grpo", "sapo"));
  {
    // Newer Trinity-RFT (after v0.5.2): no reference model, no KL, no entropy term.
    Preset p = P("m2po", "M2PO: second-moment trust region for stale rollouts (arXiv 2510.01161)", 8, "grpo", "m2po");
    p.kl_loss_fn = "none", p.entropy_loss_fn = "none";
    v.push_back(p);
  }
  for (const char* name : {"mix", "mix_chord"}) {
    Preset p = P(name,
                 std::string(name) == "mix" ? "GRPO on rollouts + μ·SFT on expert data"
                                            : "CHORD: scheduled μ, φ-weighted SFT on expert data (arXiv 2508.11408)",
                 8, "grpo", name);
    p.entropy_loss_fn = "mix", p.sample_strategy = "mix";
    v.push_back(p);
  }
  {
    // RAFT is SFT on filtered rollouts: no advantage (Trinity falls back to ppo GAE and fails, [obs]).
    Preset p = P("raft", "RAFT: reward-ranked fine-tuning = SFT on good rollouts (arXiv 2304.06767)", 1, "", "sft",
                 L::kNone);
    p.kl_loss_fn = "none", p.entropy_loss_fn = "none";
    v.push_back(p);
  }
  {
    Preset p = P("sft", "supervised fine-tuning", 1, "", "sft", L::kNone);
    p.kl_loss_fn = "none", p.entropy_loss_fn = "none", p.schema = Schema::kSft;
    v.push_back(p);
  }
  {
    Preset p = P("dpo", "direct preference optimisation (arXiv 2305.18290)", 2, "", "dpo", L::kNone);
    p.repeat_forced = true, p.schema = Schema::kDpo;
    v.push_back(p);
  }
  {
    Preset p = P("on_policy_distill", "on-policy distillation: A = teacher − student logprob", 8,
                 "on_policy_distill", "ppo", L::kTrainer);
    p.advantage_fn_args = {{"kl_coef", 1.0}};
    p.kl_loss_fn = "none", p.entropy_loss_fn = "none";
    v.push_back(p);
  }
  {
    Preset p = P("jsd", "on-policy distillation with a generalised JSD advantage", 8, "jsd", "ppo", L::kTrainer);
    p.advantage_fn_args = {{"kl_coef", 1.0}, {"lambda_coef", 0.5}};
    p.kl_loss_fn = "none", p.entropy_loss_fn = "none";
    v.push_back(p);
  }
  return v;
}

[[noreturn]] void unknown_key(const std::string& key) {
  std::vector<std::string> all = AlgorithmSpec::scalar_keys();
  for (const auto& k : AlgorithmSpec::map_keys()) all.push_back(k);
  throw ConfigError("algorithm", strcat("unknown key 'algorithm.", key, "'", did_you_mean_suffix(key, all),
                                        "; valid keys are: ", join_names(all)));
}

std::string as_string(const std::string& key, const ArgValue& v) {
  if (auto* s = std::get_if<std::string>(&v.v)) return *s;
  throw ConfigError("algorithm", strcat("algorithm.", key, " must be a string, got ", v.type_name(), " ", v.repr()));
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> k = build();
  return k;
}

const Preset& find_preset(const std::string& algorithm_type) {
  for (const auto& p : presets())
    if (p.name == algorithm_type) return p;
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  throw ConfigError("algorithm",
                    strcat("algorithm.algorithm_type \"", algorithm_type, "\" is unknown",
                           did_you_mean_suffix(algorithm_type, names), "; valid types are: ", join_names(names)));
}

const std::vector<std::string>& AlgorithmSpec::scalar_keys() {
  static const std::vector<std::string> k = {"algorithm_type", "repeat_times",   "advantage_fn",
                                             "policy_loss_fn", "kl_penalty_fn",  "kl_loss_fn",
                                             "entropy_loss_fn", "sample_strategy", "loss_agg_mode"};
  return k;
}

const std::vector<std::string>& AlgorithmSpec::map_keys() {
  static const std::vector<std::string> k = {"advantage_fn_args", "policy_loss_fn_args", "kl_penalty_fn_args",
                                             "kl_loss_fn_args",   "entropy_loss_fn_args", "sample_strategy_args",
                                             "optimizer"};
  return k;
}

void AlgorithmSpec::set(const std::string& key, const ArgValue& v) {
  if (v.is_null()) {
    // YAML `key: null` / `~` means "use the default".
    if (std::find(scalar_keys().begin(), scalar_keys().end(), key) == scalar_keys().end()) unknown_key(key);
    return;
  }
  if (key == "algorithm_type") {
    algorithm_type = as_string(key, v);
  } else if (key == "repeat_times") {
    const auto* i = std::get_if<int64_t>(&v.v);
    if (!i || *i < 1)
      throw ConfigError("algorithm", strcat("algorithm.repeat_times must be an integer >= 1, got ", v.repr()));
    repeat_times = *i;
  } else if (key == "advantage_fn") {
    advantage_fn = as_string(key, v);
  } else if (key == "policy_loss_fn") {
    policy_loss_fn = as_string(key, v);
  } else if (key == "kl_penalty_fn") {
    kl_penalty_fn = as_string(key, v);
  } else if (key == "kl_loss_fn") {
    kl_loss_fn = as_string(key, v);
  } else if (key == "entropy_loss_fn") {
    entropy_loss_fn = as_string(key, v);
  } else if (key == "sample_strategy") {
    sample_strategy = as_string(key, v);
  } else if (key == "loss_agg_mode") {
    loss_agg_mode = as_string(key, v);
  } else if (std::find(map_keys().begin(), map_keys().end(), key) != map_keys().end()) {
    throw ConfigError("algorithm", strcat("algorithm.", key, " must be a mapping, got ", v.type_name(), " ", v.repr()));
  } else {
    unknown_key(key);
  }
}

void AlgorithmSpec::set_map(const std::string& key, const ArgMap& m) {
  if (key == "advantage_fn_args") advantage_fn_args = m;
  else if (key == "policy_loss_fn_args") policy_loss_fn_args = m;
  else if (key == "kl_penalty_fn_args") kl_penalty_fn_args = m;
  else if (key == "kl_loss_fn_args") kl_loss_fn_args = m;
  else if (key == "entropy_loss_fn_args") entropy_loss_fn_args = m;
  else if (key == "sample_strategy_args") sample_strategy_args = m;
  else if (key == "optimizer") optimizer = m;
  else if (std::find(scalar_keys().begin(), scalar_keys().end(), key) != scalar_keys().end())
    throw ConfigError("algorithm", strcat("algorithm.", key, " must be a scalar, got a mapping"));
  else
    unknown_key(key);
}

}  // namespace trinity::algo
