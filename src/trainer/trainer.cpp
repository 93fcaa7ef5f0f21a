// PolicyTrainer: construction (reference copy, critic) and train_step, which runs the stages of
// train_stages.h in order: reference/critic passes, advantages, critic update, actor update over
// micro-batches with the mini-batch normaliser, clipping and AdamW; see trainer.h.
#include "trainer/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"
#include "trainer/train_stages.h"

namespace trinity::trainer {

model::Transformer clone(const model::Transformer& m, model::WeightStorage storage) {
  model::Transformer c(m.config(), m.head(), storage);
  c.copy_weights_from(m);
  return c;
}

model::Transformer make_critic(const model::Transformer& actor, float head_std, uint64_t seed) {
  model::Transformer c(actor.config(), model::HeadKind::kValue);
  const auto views = actor.param_tensors();
  const auto& specs = actor.param_specs();
  Rng rng(seed);
  for (const auto& s : c.param_specs()) {
    float* dst = c.param(s.name);
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    if (s.name.rfind("score.", 0) == 0) {
      for (int64_t i = 0; i < n; ++i)
        dst[i] = head_std > 0 && s.name == "score.weight" ? static_cast<float>(rng.normal()) * head_std : 0.0f;
      continue;
    }
    const auto it = std::find_if(specs.begin(), specs.end(), [&](const model::ParamSpec& p) { return p.name == s.name; });
    TRINITY_ASSERT(it != specs.end(), "critic parameter ", s.name, " missing from the actor");
    const auto& v = views[static_cast<size_t>(it - specs.begin())];  // F32, or BF16 when held
    tensor::convert_to_f32(dst, v.data(), v.dtype(), n);
  }
  return c;
}

PolicyTrainer::PolicyTrainer(model::Transformer actor, const algo::AlgorithmSpec& spec, TrainerOptions opts)
    : actor_(std::move(actor)),
      alg_(std::make_unique<algo::Algorithm>(spec)),
      opts_(opts),
      opt_(actor_.num_trainable(), opts.optim) {
  opts_.schedule.validate();
  if (!(opts_.temperature > 0))
    throw ConfigError("trainer", strcat("rollout temperature must be > 0, got ", opts_.temperature));
  if (opts_.ppo_epochs < 1) throw ConfigError("trainer", strcat("ppo_epochs must be >= 1, got ", opts_.ppo_epochs));
  if (alg_->advantage_fn() && (alg_->advantage_fn()->needs() & algo::kAdvNeedNec))
    throw UnsupportedError("trainer", strcat("advantage_fn ", alg_->advantage_fn_name(), ": ", algo::kNecUnsupported));
  // With LoRA the reference policy is the frozen base: the actor with its adapters off, no copy.
  const auto& rc = opts_.rollout_correction;
  if (!rc.rollout_is.empty()) {
    if (rc.rollout_is != "token" && rc.rollout_is != "sequence")
      throw ConfigError(
          "trainer", strcat("rollout_correction.rollout_is '", rc.rollout_is, "': expected token, sequence or null"));
    if (rc.bypass_mode)
      throw ConfigError("trainer",
                        "rollout_correction.rollout_is needs bypass_mode: false (the trainer recomputes the old "
                        "logprobs the importance weights compare with the rollout's)");
    if (!(rc.rollout_is_threshold > 0))
      throw ConfigError("trainer",
                        strcat("rollout_correction.rollout_is_threshold must be > 0, got ", rc.rollout_is_threshold));
    if (!alg_->policy_loss().takes_rollout_is())
      throw UnsupportedError("trainer",
                             strcat("rollout_correction.rollout_is with policy_loss_fn ", alg_->policy_loss_fn_name(),
                                    " (it applies to the losses on the rollout ratio: ppo, gspo, cispo, sapo, "
                                    "topr, sppo, importance_sampling, m2po, rec)"));
  }
  if (alg_->use_reference() && !actor_.has_lora())
    ref_ = std::make_unique<model::Transformer>(clone(actor_, opts_.reference_storage));
  if (alg_->use_critic()) {
    opts_.critic_schedule.validate();
    // The critic trains fully (Trinity's lora_configs are the actor's), from the merged weights.
    critic_ = std::make_unique<model::Transformer>(
        actor_.has_lora() ? make_critic(model::merged_copy(actor_), opts_.critic_head_std, opts_.seed)
                          : make_critic(actor_, opts_.critic_head_std, opts_.seed));
    critic_->set_gradient_checkpointing(actor_.gradient_checkpointing());
    critic_opt_ = std::make_unique<AdamW>(critic_->num_params(), opts_.critic_optim);
  }
}

PolicyTrainer::~PolicyTrainer() = default;

std::shared_ptr<const model::Transformer> PolicyTrainer::snapshot() const {
  // With LoRA: the base as held plus the adapters; the engine merges them into its packed copy.
  return std::make_shared<const model::Transformer>(model::adapted_copy(actor_));
}

namespace {

uint64_t step_seed(uint64_t seed, int64_t step) {
  return seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step);
}

}  // namespace

// The stages are in train_stages.cpp; this is their order.
std::map<std::string, double> PolicyTrainer::train_step(std::vector<buffer::Experience> batch, int64_t step) {
  Timer total;
  algo::Metrics m;
  StepBatch s = prepare_step(std::move(batch), *alg_, opts_);
  if (alg_->use_reference()) {
    Timer t;
    if (ref_) {
      s.ref_lp = policy_logprobs(*ref_, s, static_cast<float>(1.0 / opts_.temperature));
    } else {  // LoRA: the base model
      actor_.set_lora_enabled(false);
      try {
        s.ref_lp = policy_logprobs(actor_, s, static_cast<float>(1.0 / opts_.temperature));
      } catch (...) {
        actor_.set_lora_enabled(true);
        throw;
      }
      actor_.set_lora_enabled(true);
    }
    m.set("time/ref", t.seconds());
  }
  if (critic_) {
    Timer t;
    s.values = critic_values(*critic_, s);
    m.set("time/values", t.seconds());
  }
  if (alg_->advantage_fn() && (alg_->advantage_fn()->needs() & algo::kAdvNeedEntropy)) {
    Timer t;  // the current actor's entropy, as verl's old-logprob pass (clipb)
    policy_logprobs(actor_, s, static_cast<float>(1.0 / opts_.temperature), &s.entropy);
    m.set("time/entropy", t.seconds());
  }
  advantages(*alg_, s, step_seed(opts_.seed, step), opts_, m);
  if (critic_) {  // before the actor, as verl
    Timer t;
    m.merge(update_critic(*critic_, *critic_opt_, *alg_, s, opts_, step));
    m.set("time/update_critic", t.seconds());
  }
  if (!opts_.rollout_correction.bypass_mode) {
    Timer t;  // verl's old_log_prob pass
    correct_rollout(actor_, s, opts_, m);
    m.set("time/old_log_prob", t.seconds());
  }
  {
    Timer t;
    m.merge(update_actor(actor_, opt_, *alg_, s, opts_, step));
    m.set("time/update_actor", t.seconds());
  }
  batch_stats(m, s, *alg_, opts_);
  const double secs = total.seconds();
  m.set("perf/throughput", secs > 0 ? m.get("perf/total_num_tokens") / secs : 0.0);
  m.set("time/train_step", secs);
  last_step_ = step;
  std::map<std::string, double> out;
  for (const auto& [k, e] : m.entries()) out[k] = e.value;
  return out;
}

}  // namespace trinity::trainer
