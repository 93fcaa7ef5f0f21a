// PolicyTrainer: reference/critic passes, trainer-side advantages, critic update, actor update over
// micro-batches with the mini-batch normaliser (batch.h), clipping and AdamW; see trainer.h.
#include "trainer/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "algorithm/value_loss.h"
#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "trainer/experience_batch.h"

namespace trinity::trainer {

using algo::AdvLocation;
using algo::Schema;

model::Transformer clone(const model::Transformer& m) {
  model::Transformer c(m.config(), m.head());
  std::memcpy(c.params(), m.params(), sizeof(float) * static_cast<size_t>(m.num_params()));
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
    std::memcpy(dst, views[static_cast<size_t>(it - specs.begin())].f32(), sizeof(float) * static_cast<size_t>(n));
  }
  return c;
}

PolicyTrainer::PolicyTrainer(model::Transformer actor, const algo::AlgorithmSpec& spec, TrainerOptions opts)
    : actor_(std::move(actor)),
      alg_(std::make_unique<algo::Algorithm>(spec)),
      opts_(opts),
      opt_(actor_.num_params(), opts.optim) {
  opts_.schedule.validate();
  if (!(opts_.temperature > 0))
    throw ConfigError("trainer", strcat("rollout temperature must be > 0, got ", opts_.temperature));
  if (opts_.ppo_epochs < 1) throw ConfigError("trainer", strcat("ppo_epochs must be >= 1, got ", opts_.ppo_epochs));
  if (alg_->use_reference()) ref_ = std::make_unique<model::Transformer>(clone(actor_));
  if (alg_->use_critic()) {
    opts_.critic_schedule.validate();
    critic_ = std::make_unique<model::Transformer>(make_critic(actor_, opts_.critic_head_std, opts_.seed));
    critic_opt_ = std::make_unique<AdamW>(critic_->num_params(), opts_.critic_optim);
  }
}

PolicyTrainer::~PolicyTrainer() = default;

std::shared_ptr<const model::Transformer> PolicyTrainer::snapshot() const {
  return std::make_shared<const model::Transformer>(clone(actor_));
}

namespace {

std::span<const float> rows_of(const std::vector<float>& v, int64_t b0, int64_t b1, int64_t T) {
  if (v.empty()) return {};
  return std::span<const float>(v).subspan(static_cast<size_t>(b0 * T), static_cast<size_t>((b1 - b0) * T));
}

// Values of the rows that have a target (one per response token, in order) from a per-row vector.
std::vector<float> target_rows(const model::Batch& mb, const std::vector<float>& per_row) {
  std::vector<float> out;
  for (int64_t i = 0; i < mb.rows(); ++i)
    if (mb.targets[static_cast<size_t>(i)] >= 0) out.push_back(per_row[static_cast<size_t>(i)]);
  return out;
}

void stats(algo::Metrics& m, const std::string& name, const std::vector<double>& v) {
  algo::adv_detail::add_stats(m, name, v);
}

template <class T>
std::vector<double> as_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

uint64_t step_seed(uint64_t seed, int64_t step) {
  return seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step);
}

}  // namespace

std::map<std::string, double> PolicyTrainer::train_step(std::vector<buffer::Experience> batch, int64_t step) {
  Timer total;
  algo::Metrics m;
  const Schema schema = alg_->schema();
  ExperienceBatch eb = make_batch(batch);
  if (schema == Schema::kDpo && !eb.dpo)
    throw ValueError("trainer", strcat("algorithm ", alg_->type(), " trains on DPO experiences (chosen + rejected "
                                       "token ids), got experiences without them"));
  if (schema != Schema::kDpo && eb.dpo)
    throw ValueError("trainer", strcat("algorithm ", alg_->type(), " cannot train on DPO (chosen/rejected) experiences"));
  if ((alg_->loss_needs() & algo::kNeedOldLogprob) && !eb.has_old_logprob)
    throw ValueError("trainer", strcat("policy_loss_fn ", alg_->policy_loss_fn_name(),
                                       " needs rollout logprobs, but some experiences have none"));
  const float inv_temp = static_cast<float>(1.0 / opts_.temperature);
  auto ranges = micro_ranges(eb, opts_.max_token_len_per_gpu, opts_.micro_batch_size, eb.dpo);

  // Reference logprobs [B, T].
  std::vector<float> ref_lp;
  if (ref_) {
    Timer t;
    ref_lp.assign(static_cast<size_t>(eb.B * eb.T), 0.0f);
    std::vector<float> lp, ent;
    for (auto [b0, b1] : ranges) {
      ref_->forward(eb.packed(b0, b1), lp, ent, inv_temp);
      const auto pad = eb.scatter(lp, b0, b1);
      std::copy(pad.begin(), pad.end(), ref_lp.begin() + b0 * eb.T);
    }
    m.set("time/ref", t.seconds());
  }
  // Critic values [B, T] at advantage time (the value of the state before each response token).
  std::vector<float> values;
  if (critic_) {
    Timer t;
    values.assign(static_cast<size_t>(eb.B * eb.T), 0.0f);
    std::vector<float> v;
    for (auto [b0, b1] : ranges) {
      const auto pb = eb.packed(b0, b1);
      critic_->forward_values(pb, v);
      const auto pad = eb.scatter(target_rows(pb, v), b0, b1);
      std::copy(pad.begin(), pad.end(), values.begin() + b0 * eb.T);
    }
    m.set("time/values", t.seconds());
  }

  // Advantages.
  const AdvLocation loc = alg_->advantage_location();
  if (loc == AdvLocation::kTrainer) {
    Timer t;
    for (const auto& e : batch)
      if (e.pending())
        throw ValueError("trainer", strcat("experience ", e.eid.uid(), " has no reward yet (pending)"));
    algo::AdvInput in = adv_input(eb);
    in.ref_logprob = ref_lp;
    in.values = values;
    Rng rng(step_seed(opts_.seed, step));
    algo::AdvOutput out = alg_->compute_advantages(in, rng);
    m.merge(out.metrics);
    bool identity = static_cast<int64_t>(out.rows.size()) == eb.B;
    for (size_t k = 0; identity && k < out.rows.size(); ++k) identity = out.rows[k] == static_cast<int64_t>(k);
    if (identity) {
      eb.advantages = std::move(out.advantages);
      eb.returns = std::move(out.returns);
    } else {
      if (out.rows.empty()) throw ValueError("trainer", "the advantage function dropped every experience of the batch");
      std::vector<buffer::Experience> kept;
      for (int64_t r : out.rows) kept.push_back(batch[static_cast<size_t>(eb.source[static_cast<size_t>(r)])]);
      const auto adv = select_rows(out.advantages, eb.T, out.rows), ret = select_rows(out.returns, eb.T, out.rows);
      ref_lp = select_rows(ref_lp, eb.T, out.rows);
      values = select_rows(values, eb.T, out.rows);
      const int64_t T0 = eb.T;
      batch = std::move(kept);
      eb = make_batch(batch);
      TRINITY_ASSERT(eb.T <= T0, "row selection grew T");
      auto repad = [&](const std::vector<float>& v) {  // [B, T0] -> [B, eb.T]
        if (v.empty() || eb.T == T0) return v;
        std::vector<float> o(static_cast<size_t>(eb.B * eb.T));
        for (int64_t b = 0; b < eb.B; ++b) std::copy_n(v.begin() + b * T0, eb.T, o.begin() + b * eb.T);
        return o;
      };
      eb.advantages = repad(adv), eb.returns = repad(ret), ref_lp = repad(ref_lp), values = repad(values);
      ranges = micro_ranges(eb, opts_.max_token_len_per_gpu, opts_.micro_batch_size, eb.dpo);
    }
    m.set("time/adv", t.seconds());
  } else if (schema == Schema::kExperience) {
    if (loc == AdvLocation::kExplorer && eb.advantages.empty() && (alg_->loss_needs() & algo::kNeedAdvantages))
      throw ValueError("trainer", strcat("algorithm ", alg_->type(), " computes advantages in the explorer, but the "
                                         "experiences carry none (run trainer::compute_advantages in the pipeline)"));
    stats(m, "critic/score", as_double(eb.rewards));
    std::vector<double> av;
    if (!eb.advantages.empty())
      for (size_t i = 0; i < eb.mask.size(); ++i)
        if (eb.mask[i] != 0) av.push_back(eb.advantages[i]);
    stats(m, "critic/advantages", av);
  }
  const int64_t B = eb.B, T = eb.T;

  // Mini-batch normaliser over all micro-batches.
  auto token_batch = [&](int64_t b0, int64_t b1) {
    algo::TokenBatch tb;
    tb.B = b1 - b0, tb.T = T;
    tb.old_logprob = rows_of(eb.old_logprob, b0, b1, T);
    tb.ref_logprob = rows_of(ref_lp, b0, b1, T);
    tb.advantages = rows_of(eb.advantages, b0, b1, T);
    tb.mask = rows_of(eb.mask, b0, b1, T);
    tb.is_expert = std::span<const uint8_t>(eb.is_expert).subspan(static_cast<size_t>(b0), static_cast<size_t>(b1 - b0));
    tb.train_step = step;
    return tb;
  };
  algo::Normalizer norm;
  for (auto [b0, b1] : ranges) norm += algo::Normalizer::of(token_batch(b0, b1));
  if (opts_.max_response_tokens > 0) norm.max_len = static_cast<double>(opts_.max_response_tokens);

  // Critic update (before the actor, as verl).
  if (critic_) {
    Timer t;
    algo::Metrics cm;
    std::vector<float> v;
    for (int64_t ep = 0; ep < opts_.ppo_epochs; ++ep) {
      critic_->zero_grad();
      for (auto [b0, b1] : ranges) {
        const auto pb = eb.packed(b0, b1);
        critic_->forward_values(pb, v);
        const auto vpad = eb.scatter(target_rows(pb, v), b0, b1);
        algo::ValueBatch vb;
        vb.B = b1 - b0, vb.T = T;
        vb.values = vpad, vb.old_values = rows_of(values, b0, b1, T);
        vb.returns = rows_of(eb.returns, b0, b1, T), vb.mask = rows_of(eb.mask, b0, b1, T);
        std::vector<float> dv(vpad.size(), 0.0f);
        algo::Metrics vm;
        algo::value_loss(vb, norm, alg_->loss_agg_mode(), opts_.cliprange_value, dv, vm);
        if (ep + 1 == opts_.ppo_epochs) cm.merge(vm, "critic/");
        const auto dpacked = eb.gather(dv.data(), b0, b1);
        std::vector<float> drow(static_cast<size_t>(pb.rows()), 0.0f);
        for (int64_t i = 0, k = 0; i < pb.rows(); ++i)
          if (pb.targets[static_cast<size_t>(i)] >= 0) drow[static_cast<size_t>(i)] = dpacked[static_cast<size_t>(k++)];
        critic_->backward_values(drow);
      }
      const double gn = clip_grad_norm(critic_->grads(), critic_->num_params(), opts_.critic_grad_clip);
      const double lr = opts_.critic_optim.lr * opts_.critic_schedule.factor(critic_opt_->steps());
      if (std::isfinite(gn)) critic_opt_->step(critic_->params(), critic_->grads(), lr);
      cm.set("critic/grad_norm", gn);
      cm.set("critic/lr", lr);
    }
    m.merge(cm);
    m.set("time/update_critic", t.seconds());
  }

  // Actor update.
  {
    Timer t;
    std::map<std::string, double> sums;
    std::vector<float> lp, ent;
    for (int64_t ep = 0; ep < opts_.ppo_epochs; ++ep) {
      actor_.zero_grad();
      algo::Metrics em;
      for (auto [b0, b1] : ranges) {
        actor_.forward(eb.packed(b0, b1), lp, ent, inv_temp);
        const auto lpp = eb.scatter(lp, b0, b1), entp = eb.scatter(ent, b0, b1);
        algo::TokenBatch tb = token_batch(b0, b1);
        tb.logprob = lpp, tb.entropy = entp;
        const algo::LossOutput lo = alg_->actor_loss(tb, norm);
        em.merge(lo.metrics);
        const bool any_dent = std::any_of(lo.dentropy.begin(), lo.dentropy.end(), [](float x) { return x != 0.0f; });
        actor_.backward(eb.gather(lo.dlogprob.data(), b0, b1),
                        any_dent ? eb.gather(lo.dentropy.data(), b0, b1) : std::vector<float>{});
      }
      const double gn = clip_grad_norm(actor_.grads(), actor_.num_params(), opts_.grad_clip);
      const double lr = opts_.optim.lr * opts_.schedule.factor(opt_.steps());
      if (std::isfinite(gn)) {
        opt_.step(actor_.params(), actor_.grads(), lr);
      } else {
        log::warn("trainer: step ", step, ": gradient norm is ", gn, "; optimizer step skipped");
      }
      em.set("actor/grad_norm", gn);
      em.set("actor/lr", lr);
      for (const auto& [k, e] : em.entries()) sums[k] += e.value;
    }
    for (const auto& [k, v] : sums) m.set(k, v / static_cast<double>(opts_.ppo_epochs));
    m.set("time/update_actor", t.seconds());
  }

  // Batch statistics.
  std::vector<double> rl, pl, mv;
  for (int64_t b = 0; b < B; ++b) {
    rl.push_back(static_cast<double>(eb.resp_len[static_cast<size_t>(b)]));
    pl.push_back(static_cast<double>(eb.prompt_len[static_cast<size_t>(b)]));
    mv.push_back(static_cast<double>(eb.model_version[static_cast<size_t>(b)]));
  }
  stats(m, "response_length", rl);
  stats(m, "prompt_length", pl);
  if (opts_.max_response_tokens > 0)
    m.set("response_length/clip_ratio",
          static_cast<double>(std::count_if(rl.begin(), rl.end(), [&](double x) { return x >= static_cast<double>(opts_.max_response_tokens); })) /
              static_cast<double>(B));
  if (schema == Schema::kExperience) stats(m, "sample/model_version", mv);
  const double tokens = static_cast<double>(eb.tokens(0, B)), secs = total.seconds();
  m.set("perf/total_num_tokens", tokens);
  m.set("perf/throughput", secs > 0 ? tokens / secs : 0.0);
  m.set("perf/micro_batches", static_cast<double>(ranges.size()));
  m.set("time/train_step", secs);
  last_step_ = step;
  std::map<std::string, double> out;
  for (const auto& [k, e] : m.entries()) out[k] = e.value;
  return out;
}

}  // namespace trinity::trainer
