// trainer.trainer_config: the verl (FSDP / Megatron) config upstream passes to its trainer. Keys with a
// trinity equivalent are mapped onto it (unless the trinity key is set too: the trinity key wins, and a
// different value is a warning); every other key gets one warning naming it, so nothing that may change
// results is silently dropped.
#include <functional>

#include "config/section.h"
#include "core/error.h"

namespace trinity::config::detail {

namespace {

struct Mapping {
  const char* verl;     // path under trainer.trainer_config
  const char* trinity;  // the trinity key it sets
  std::function<void(Ctx&, const Tree&, const std::string&, Parsed&)> set;
};

const std::vector<Mapping>& mappings() {
  static const std::vector<Mapping> m = {
      {"critic.optim.lr", "trainer.critic.lr",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) { p.cfg.trainer.critic.lr = as_f64(c, v, at); }},
      {"critic.cliprange_value", "trainer.critic.cliprange_value",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) {
         p.cfg.trainer.critic.cliprange_value = as_f64(c, v, at);
       }},
      {"trainer.max_actor_ckpt_to_keep", "trainer.max_checkpoints_to_keep",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) {
         p.cfg.trainer.max_checkpoints_to_keep = as_i64(c, v, at);
       }},
      // trinity saves the critic inside the actor's checkpoint: one count keeps both.
      {"trainer.max_critic_ckpt_to_keep", "trainer.max_checkpoints_to_keep",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) {
         const int64_t n = as_i64(c, v, at);
         auto& k = p.cfg.trainer.max_checkpoints_to_keep;
         k = k ? std::max(*k, n) : n;
       }},
      {"actor_rollout_ref.actor.optim.lr", "algorithm.optimizer.lr",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) { p.cfg.optimizer.lr = as_f64(c, v, at); }},
      {"actor_rollout_ref.actor.optim.weight_decay", "algorithm.optimizer.weight_decay",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) {
         p.cfg.optimizer.weight_decay = as_f64(c, v, at);
       }},
      {"actor_rollout_ref.actor.grad_clip", "trainer.grad_clip",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) { p.cfg.trainer.grad_clip = as_f64(c, v, at); }},
      {"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "trainer.micro_batch_size",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) {
         p.cfg.trainer.micro_batch_size = as_i64(c, v, at);
       }},
      {"actor_rollout_ref.model.enable_gradient_checkpointing", "trainer.gradient_checkpointing",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) {
         p.cfg.trainer.gradient_checkpointing = as_bool(c, v, at);
       }},
      {"algorithm.rollout_correction.bypass_mode", "trainer.rollout_correction.bypass_mode",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) {
         p.cfg.trainer.rollout_correction.bypass_mode = as_bool(c, v, at);
       }},
      {"algorithm.rollout_correction.rollout_is", "trainer.rollout_correction.rollout_is",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) {
         p.cfg.trainer.rollout_correction.rollout_is = v.is_null() ? "" : as_str(c, v, at);
       }},
      {"algorithm.rollout_correction.rollout_is_threshold", "trainer.rollout_correction.rollout_is_threshold",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) {
         p.cfg.trainer.rollout_correction.rollout_is_threshold = as_f64(c, v, at);
       }},
      {"actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "trainer.max_token_len_per_gpu",
       [](Ctx& c, const Tree& v, const std::string& at, Parsed& p) { p.max_token_len_per_gpu = as_i64(c, v, at); }},
  };
  return m;
}

// Leaves (scalars, lists, nulls) of `t` with their dotted paths below `prefix`.
void leaves(const Tree& t, const std::string& prefix, std::vector<std::pair<std::string, const Tree*>>& out) {
  if (t.is_map() && !t.map.empty()) {
    for (const auto& [k, v] : t.map) leaves(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  out.emplace_back(prefix, &t);
}

// Trinity keys the mapping writes that another spelling also sets (trainer.ppo_micro_batch_size_per_gpu).
bool trinity_key_set(const Tree& root, const std::string& key) {
  if (tree_at(root, key)) return true;
  if (key == "trainer.micro_batch_size") return tree_at(root, "trainer.ppo_micro_batch_size_per_gpu") != nullptr;
  if (key == "trainer.grad_clip") return tree_at(root, "algorithm.optimizer.clip_grad") != nullptr;
  return false;
}

}  // namespace

void map_trainer_config(Ctx& c, const Tree& root, Parsed& p) {
  const Tree* tc = tree_at(root, "trainer.trainer_config");
  if (!tc || tc->is_null()) return;
  if (!tc->is_map()) c.fail(*tc, strcat("trainer.trainer_config: expected a mapping, got ", tc->short_repr()));
  std::vector<std::pair<std::string, const Tree*>> all;
  leaves(*tc, "", all);
  for (const auto& [key, node] : all) {
    const std::string at = "trainer.trainer_config." + key;
    const Mapping* m = nullptr;
    for (const auto& cand : mappings())
      if (key == cand.verl) m = &cand;
    if (!m) {
      c.warn(strcat(c.loc(*node), ": ", at, " has no effect in trinity (a verl option without a trinity equivalent)"));
      continue;
    }
    if (trinity_key_set(root, m->trinity)) {
      c.warn(strcat(c.loc(*node), ": ", at, " is ignored: ", m->trinity, " is set too and wins"));
      continue;
    }
    m->set(c, *node, at, p);
  }
}

}  // namespace trinity::config::detail
