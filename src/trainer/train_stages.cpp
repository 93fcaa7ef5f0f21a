// The stages of one train step (see train_stages.h): batch preparation, reference / critic passes,
// advantages, critic and actor updates, batch statistics.
#include "trainer/train_stages.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "algorithm/minibatch.h"
#include "algorithm/value_loss.h"
#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "dist/comm.h"
#include "pipeline/advantages.h"
#include "trainer/packed_batch.h"

namespace trinity::trainer {

using algo::AdvLocation;
using algo::Schema;

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

// Micro-batches of each rank's slice of the rows (DPO pairs stay whole), in row order.
std::vector<std::pair<int64_t, int64_t>> ranges_of(const pipeline::ExperienceBatch& eb, const TrainerOptions& o,
                                                   std::vector<int>& owner) {
  const int n = o.comm ? o.comm->size() : 1;
  const int64_t unit = eb.dpo ? 2 : 1, units = (eb.B + unit - 1) / unit;
  std::vector<std::pair<int64_t, int64_t>> out;
  owner.clear();
  for (int r = 0; r < n; ++r) {
    const int64_t lo = std::min(eb.B, units * r / n * unit), hi = std::min(eb.B, units * (r + 1) / n * unit);
    for (auto rg :
         pipeline::micro_ranges(eb, o.max_token_len_per_gpu, o.micro_batch_size, eb.dpo, lo, hi, o.share_prompts)) {
      out.push_back(rg);
      owner.push_back(r);
    }
  }
  return out;
}

// The mini-batch normaliser the actor loss uses (minibatch_actor_loss builds the same one).
algo::Normalizer normaliser(const StepBatch& s, const TrainerOptions& o, int64_t step) {
  algo::Normalizer norm;
  for (auto [b0, b1] : s.ranges) norm += algo::Normalizer::of(token_rows(s, b0, b1, step));
  if (o.max_response_tokens > 0) norm.max_len = static_cast<double>(o.max_response_tokens);
  return norm;
}

}  // namespace

StepBatch prepare_step(std::vector<buffer::Experience> exps, const algo::Algorithm& alg, const TrainerOptions& o) {
  StepBatch s;
  s.eb = pipeline::make_batch(exps);
  s.exps = std::move(exps);
  const Schema schema = alg.schema();
  if (schema == Schema::kDpo && !s.eb.dpo)
    throw ValueError("trainer", strcat("algorithm ", alg.type(),
                                       " trains on DPO experiences (chosen + rejected "
                                       "token ids), got experiences without them"));
  if (schema != Schema::kDpo && s.eb.dpo)
    throw ValueError("trainer", strcat("algorithm ", alg.type(), " cannot train on DPO (chosen/rejected) experiences"));
  if ((alg.loss_needs() & algo::kNeedOldLogprob) && !s.eb.has_old_logprob)
    throw ValueError("trainer", strcat("policy_loss_fn ", alg.policy_loss_fn_name(),
                                       " needs rollout logprobs, but some experiences have none"));
  s.comm = o.comm;
  s.rank = o.comm ? o.comm->rank() : 0;
  s.share_prompts = o.share_prompts;
  s.ranges = ranges_of(s.eb, o, s.owner);
  return s;
}

std::vector<float> policy_logprobs(model::Transformer& m, const StepBatch& s, float inv_temp,
                                   std::vector<float>* entropy) {
  const auto& eb = s.eb;
  std::vector<float> out(static_cast<size_t>(eb.B * eb.T), 0.0f), lp, ent;
  if (entropy) entropy->assign(out.size(), 0.0f);
  for (size_t k = 0; k < s.ranges.size(); ++k) {
    if (!s.mine(k)) continue;
    const auto [b0, b1] = s.ranges[k];
    m.forward(packed_batch(eb, b0, b1, s.share_prompts), lp, ent, inv_temp);
    const auto pad = eb.scatter(lp, b0, b1);
    std::copy(pad.begin(), pad.end(), out.begin() + b0 * eb.T);
    if (entropy) {
      const auto epad = eb.scatter(ent, b0, b1);
      std::copy(epad.begin(), epad.end(), entropy->begin() + b0 * eb.T);
    }
  }
  reduce_ranks(s, out, "the all-reduce of reference logprobs");
  if (entropy) reduce_ranks(s, *entropy, "the all-reduce of entropies");
  return out;
}

std::vector<float> critic_values(model::Transformer& critic, const StepBatch& s) {
  const auto& eb = s.eb;
  std::vector<float> out(static_cast<size_t>(eb.B * eb.T), 0.0f), v;
  for (size_t k = 0; k < s.ranges.size(); ++k) {
    if (!s.mine(k)) continue;
    const auto [b0, b1] = s.ranges[k];
    const auto pb = packed_batch(eb, b0, b1, s.share_prompts);
    critic.forward_values(pb, v);
    const auto pad = eb.scatter(target_rows(pb, v), b0, b1);
    std::copy(pad.begin(), pad.end(), out.begin() + b0 * eb.T);
  }
  reduce_ranks(s, out, "the all-reduce of critic values");
  return out;
}

void advantages(algo::Algorithm& alg, StepBatch& s, uint64_t seed, const TrainerOptions& o, algo::Metrics& m) {
  auto& eb = s.eb;
  const AdvLocation loc = alg.advantage_location();
  if (loc != AdvLocation::kTrainer) {
    if (alg.schema() != Schema::kExperience) return;
    if (loc == AdvLocation::kExplorer && eb.advantages.empty() && (alg.loss_needs() & algo::kNeedAdvantages))
      throw ValueError("trainer", strcat("algorithm ", alg.type(),
                                         " computes advantages in the explorer, but the "
                                         "experiences carry none (run pipeline::compute_advantages in the explorer)"));
    stats(m, "critic/score", std::vector<double>(eb.rewards.begin(), eb.rewards.end()));
    std::vector<double> av;
    if (!eb.advantages.empty())
      for (size_t i = 0; i < eb.mask.size(); ++i)
        if (eb.mask[i] != 0) av.push_back(eb.advantages[i]);
    stats(m, "critic/advantages", av);
    return;
  }
  Timer t;
  for (const auto& e : s.exps)
    if (e.pending()) throw ValueError("trainer", strcat("experience ", e.eid.uid(), " has no reward yet (pending)"));
  algo::AdvInput in = pipeline::adv_input(eb);
  in.ref_logprob = s.ref_lp;
  in.values = s.values;
  in.entropy = s.entropy;
  Rng rng(seed);
  algo::AdvOutput out = alg.compute_advantages(in, rng);
  m.merge(out.metrics);
  bool identity = static_cast<int64_t>(out.rows.size()) == eb.B;
  for (size_t k = 0; identity && k < out.rows.size(); ++k) identity = out.rows[k] == static_cast<int64_t>(k);
  if (identity) {
    eb.advantages = std::move(out.advantages);
    eb.returns = std::move(out.returns);
    if (!out.mask.empty()) eb.mask = std::move(out.mask);
  } else {
    // The advantage function dropped or duplicated rows: rebuild the batch from the rows it kept.
    if (out.rows.empty()) throw ValueError("trainer", "the advantage function dropped every experience of the batch");
    std::vector<buffer::Experience> kept;
    for (int64_t r : out.rows) kept.push_back(s.exps[static_cast<size_t>(eb.source[static_cast<size_t>(r)])]);
    const auto adv = pipeline::select_rows(out.advantages, eb.T, out.rows);
    const auto ret = pipeline::select_rows(out.returns, eb.T, out.rows);
    const auto ref = pipeline::select_rows(s.ref_lp, eb.T, out.rows);
    const auto val = pipeline::select_rows(s.values, eb.T, out.rows);
    const auto msk = out.mask.empty() ? std::vector<float>{} : pipeline::select_rows(out.mask, eb.T, out.rows);
    const int64_t T0 = eb.T;
    s.exps = std::move(kept);
    eb = pipeline::make_batch(s.exps);
    TRINITY_ASSERT(eb.T <= T0, "row selection grew T");
    auto repad = [&](const std::vector<float>& v) {  // [B, T0] -> [B, eb.T]
      if (v.empty() || eb.T == T0) return v;
      std::vector<float> r(static_cast<size_t>(eb.B * eb.T));
      for (int64_t b = 0; b < eb.B; ++b) std::copy_n(v.begin() + b * T0, eb.T, r.begin() + b * eb.T);
      return r;
    };
    eb.advantages = repad(adv), eb.returns = repad(ret), s.ref_lp = repad(ref), s.values = repad(val);
    if (!msk.empty()) eb.mask = repad(msk);
    s.entropy.clear();  // read by the advantage function only
    s.ranges = ranges_of(eb, o, s.owner);
  }
  m.set("time/adv", t.seconds());
}

algo::TokenBatch token_rows(const StepBatch& s, int64_t b0, int64_t b1, int64_t train_step) {
  const auto& eb = s.eb;
  const int64_t T = eb.T;
  algo::TokenBatch tb;
  tb.B = b1 - b0, tb.T = T;
  tb.old_logprob = rows_of(eb.old_logprob, b0, b1, T);
  tb.ref_logprob = rows_of(s.ref_lp, b0, b1, T);
  tb.pg_weight = rows_of(s.is_weight, b0, b1, T);
  tb.advantages = rows_of(eb.advantages, b0, b1, T);
  tb.mask = rows_of(eb.mask, b0, b1, T);
  tb.is_expert = std::span<const uint8_t>(eb.is_expert).subspan(static_cast<size_t>(b0), static_cast<size_t>(b1 - b0));
  tb.train_step = train_step;
  return tb;
}

algo::Metrics update_critic(model::Transformer& critic, AdamW& opt, const algo::Algorithm& alg, const StepBatch& s,
                            const TrainerOptions& o, int64_t step) {
  const auto& eb = s.eb;
  const int64_t T = eb.T;
  const algo::Normalizer norm = normaliser(s, o, step);
  algo::Metrics cm;
  std::vector<float> v;
  for (int64_t ep = 0; ep < o.ppo_epochs; ++ep) {
    critic.zero_grad();
    algo::Metrics em;
    for (size_t r = 0; r < s.ranges.size(); ++r) {
      if (!s.mine(r)) continue;
      const auto [b0, b1] = s.ranges[r];
      const auto pb = packed_batch(eb, b0, b1, s.share_prompts);
      critic.forward_values(pb, v);
      const auto vpad = eb.scatter(target_rows(pb, v), b0, b1);
      algo::ValueBatch vb;
      vb.B = b1 - b0, vb.T = T;
      vb.values = vpad, vb.old_values = rows_of(s.values, b0, b1, T);
      vb.returns = rows_of(eb.returns, b0, b1, T), vb.mask = rows_of(eb.mask, b0, b1, T);
      std::vector<float> dv(vpad.size(), 0.0f);
      algo::Metrics vm;
      algo::value_loss(vb, norm, alg.loss_agg_mode(), o.cliprange_value, dv, vm);
      if (ep + 1 == o.ppo_epochs) em.merge(vm, "critic/");
      const auto dpacked = eb.gather(dv.data(), b0, b1);
      std::vector<float> drow(static_cast<size_t>(pb.rows()), 0.0f);
      for (int64_t i = 0, k = 0; i < pb.rows(); ++i)
        if (pb.targets[static_cast<size_t>(i)] >= 0) drow[static_cast<size_t>(i)] = dpacked[static_cast<size_t>(k++)];
      critic.backward_values(drow);
    }
    if (s.comm)
      s.comm->allreduce_sum(critic.grads(), critic.num_params(),
                            strcat("the critic gradient all-reduce of step ", step));
    if (ep + 1 == o.ppo_epochs) {
      merge_ranks(em, s.comm, "the critic metrics gather");
      cm.merge(em);
    }
    const double gn = clip_grad_norm(critic.grads(), critic.num_params(), o.critic_grad_clip);
    const double lr = o.critic_optim.lr * o.critic_schedule.factor(opt.steps());
    if (std::isfinite(gn)) opt.step(critic.params(), critic.grads(), lr);
    cm.set("critic/grad_norm", gn);
    cm.set("critic/lr", lr);
  }
  return cm;
}

algo::Metrics update_actor(model::Transformer& actor, AdamW& opt, const algo::Algorithm& alg, const StepBatch& s,
                           const TrainerOptions& o, int64_t step) {
  const auto& eb = s.eb;
  const float inv_temp = static_cast<float>(1.0 / o.temperature);
  const double max_len = o.max_response_tokens > 0 ? static_cast<double>(o.max_response_tokens) : 0.0;
  std::map<std::string, double> sums;
  std::vector<float> lp, ent;
  std::vector<float> lpp, entp;  // [b1-b0, T] of the micro-batch in flight
  // Training forwards (LoRA dropout) for this update only.
  struct Training {
    model::Transformer& m;
    explicit Training(model::Transformer& t) : m(t) { m.set_training(true); }
    ~Training() { m.set_training(false); }
  } training(actor);
  auto rows = [&](int64_t b0, int64_t b1, bool with_policy) {
    algo::TokenBatch tb = token_rows(s, b0, b1, step);
    if (with_policy) {
      actor.forward(packed_batch(eb, b0, b1, s.share_prompts), lp, ent, inv_temp);
      lpp = eb.scatter(lp, b0, b1), entp = eb.scatter(ent, b0, b1);
      tb.logprob = lpp, tb.entropy = entp;
    }
    return tb;
  };
  auto backward = [&](int64_t b0, int64_t b1, const algo::LossOutput& lo) {
    const bool any_dent = std::any_of(lo.dentropy.begin(), lo.dentropy.end(), [](float x) { return x != 0.0f; });
    actor.backward(eb.gather(lo.dlogprob.data(), b0, b1),
                   any_dent ? eb.gather(lo.dentropy.data(), b0, b1) : std::vector<float>{});
  };
  for (int64_t ep = 0; ep < o.ppo_epochs; ++ep) {
    actor.zero_grad();
    algo::Metrics em =
        algo::minibatch_actor_loss(alg, s.ranges, max_len, rows, backward, [&](size_t k) { return s.mine(k); }).metrics;
    if (s.comm)
      s.comm->allreduce_sum(actor.trainable_grads(), actor.num_trainable(),
                            strcat("the gradient all-reduce of step ", step));
    merge_ranks(em, s.comm, "the actor metrics gather");
    const double gn = clip_grad_norm(actor.trainable_grads(), actor.num_trainable(), o.grad_clip);
    const double lr = o.optim.lr * o.schedule.factor(opt.steps());
    if (std::isfinite(gn)) {
      opt.step(actor.trainable_params(), actor.trainable_grads(), lr);
    } else {
      log::warn("trainer: step ", step, ": gradient norm is ", gn, "; optimizer step skipped");
    }
    em.set("actor/grad_norm", gn);
    em.set("actor/lr", lr);
    for (const auto& [k, e] : em.entries()) sums[k] += e.value;
  }
  algo::Metrics m;
  for (const auto& [k, v] : sums) m.set(k, v / static_cast<double>(o.ppo_epochs));
  return m;
}

void reduce_ranks(const StepBatch& s, std::vector<float>& v, const std::string& what) {
  if (s.comm && s.comm->size() > 1) s.comm->allreduce_sum(v.data(), static_cast<int64_t>(v.size()), what);
}

void merge_ranks(algo::Metrics& m, dist::Comm* comm, const std::string& what) {
  if (!comm || comm->size() <= 1) return;
  std::string mine;
  char buf[64];
  for (const auto& [k, e] : m.entries()) {
    std::snprintf(buf, sizeof buf, "\t%.17g\t%d\n", e.value, static_cast<int>(e.merge));
    mine += k;
    mine += buf;
  }
  const std::vector<std::string> all = comm->gather(mine, 0, what);
  if (comm->rank() != 0) return;
  algo::Metrics merged;
  for (const std::string& text : all) {
    algo::Metrics one;
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t t1 = text.find('\t', pos), t2 = text.find('\t', t1 + 1), nl = text.find('\n', t2 + 1);
      TRINITY_ASSERT(t1 != std::string::npos && t2 != std::string::npos && nl != std::string::npos, "bad metrics text");
      const std::string name = text.substr(pos, t1 - pos);
      const double v = std::strtod(text.c_str() + t1 + 1, nullptr);
      switch (static_cast<algo::Merge>(std::atoi(text.c_str() + t2 + 1))) {
        case algo::Merge::kSum:
          one.add(name, v);
          break;
        case algo::Merge::kLast:
          one.set(name, v);
          break;
        case algo::Merge::kMax:
          one.max(name, v);
          break;
        case algo::Merge::kMin:
          one.min(name, v);
          break;
      }
      pos = nl + 1;
    }
    merged.merge(one);
  }
  m = std::move(merged);
}

void batch_stats(algo::Metrics& m, const StepBatch& s, const algo::Algorithm& alg, const TrainerOptions& o) {
  const auto& eb = s.eb;
  std::vector<double> rl, pl, mv;
  for (int64_t b = 0; b < eb.B; ++b) {
    rl.push_back(static_cast<double>(eb.resp_len[static_cast<size_t>(b)]));
    pl.push_back(static_cast<double>(eb.prompt_len[static_cast<size_t>(b)]));
    mv.push_back(static_cast<double>(eb.model_version[static_cast<size_t>(b)]));
  }
  stats(m, "response_length", rl);
  stats(m, "prompt_length", pl);
  if (o.max_response_tokens > 0) {
    const auto clipped =
        std::count_if(rl.begin(), rl.end(), [&](double x) { return x >= static_cast<double>(o.max_response_tokens); });
    m.set("response_length/clip_ratio", static_cast<double>(clipped) / static_cast<double>(eb.B));
  }
  if (alg.schema() == Schema::kExperience) stats(m, "sample/model_version", mv);
  m.set("perf/total_num_tokens", static_cast<double>(eb.tokens(0, eb.B)));
  m.set("perf/micro_batches", static_cast<double>(s.ranges.size()));
  // Prompt tokens the model did not compute again for another row (trainer.share_prompt_prefix).
  int64_t shared = 0;
  if (s.share_prompts)
    for (auto [b0, b1] : s.ranges) shared += eb.tokens(b0, b1) - packed_batch(eb, b0, b1, true).rows();
  m.set("perf/shared_prompt_tokens", static_cast<double>(shared));
}

}  // namespace trinity::trainer
