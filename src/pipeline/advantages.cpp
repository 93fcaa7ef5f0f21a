// Explorer-side advantages over one explore step's experiences (see advantages.h).
#include "pipeline/advantages.h"

#include "core/error.h"

namespace trinity::pipeline {

algo::AdvInput adv_input(const ExperienceBatch& eb) {
  algo::AdvInput in;
  in.B = eb.B, in.T = eb.T;
  in.rewards = eb.rewards;
  in.token_rewards = eb.token_rewards;
  in.mask = eb.mask;
  in.lengths = eb.lengths;
  in.old_logprob = eb.old_logprob;
  in.teacher_logprob = eb.teacher_logprob;
  in.group = eb.group;
  in.run = eb.run;
  in.run_step = eb.run_step;
  in.anchor = eb.anchor;
  in.reward_baseline = eb.reward_baseline;
  return in;
}

std::map<std::string, double> compute_advantages(algo::Algorithm& alg, std::vector<buffer::Experience>& exps,
                                                 Rng& rng) {
  std::map<std::string, double> metrics;
  if (exps.empty()) return metrics;
  if (alg.use_critic())
    throw ConfigError("experience_pipeline", strcat("advantage_fn ", alg.advantage_fn_name(),
                                                    " reads critic values; it runs in the trainer, not the explorer"));
  for (const auto& e : exps)
    if (e.pending())
      throw ValueError("experience_pipeline", strcat("experience ", e.eid.uid(),
                                                     " has no reward yet (pending); "
                                                     "advantages need every reward"));
  const ExperienceBatch eb = make_batch(exps);
  if (eb.dpo) throw ValueError("experience_pipeline", "advantages of DPO experiences are undefined");
  const algo::AdvOutput out = alg.compute_advantages(adv_input(eb), rng);
  std::vector<buffer::Experience> kept;
  kept.reserve(out.rows.size());
  for (int64_t r : out.rows) {
    buffer::Experience e = exps[static_cast<size_t>(r)];
    const int64_t R = eb.resp_len[static_cast<size_t>(r)];
    e.advantages.assign(out.advantages.begin() + r * eb.T, out.advantages.begin() + r * eb.T + R);
    e.returns.assign(out.returns.begin() + r * eb.T, out.returns.begin() + r * eb.T + R);
    if (!out.mask.empty()) {  // the function dropped tokens from the action mask
      e.action_mask.resize(static_cast<size_t>(R));
      for (int64_t t = 0; t < R; ++t) e.action_mask[static_cast<size_t>(t)] = out.mask[eb.at(r, t)] != 0 ? 1 : 0;
    }
    kept.push_back(std::move(e));
  }
  exps = std::move(kept);
  for (const auto& [k, e] : out.metrics.entries()) metrics[k] = e.value;
  return metrics;
}

}  // namespace trinity::pipeline
