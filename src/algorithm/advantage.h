// Advantage functions (Trinity-RFT advantage_fn) over one batch of experiences, padded to T response
// tokens ([B, T] row-major). Group functions (grpo, rloo, opmd, ...) turn one scalar reward per
// experience into a scalar advantage a_b broadcast over the action tokens (A_bt = a_b·m_bt);
// token functions (ppo GAE, reinforce++, on_policy_distill, jsd) produce A_bt directly. Grouping keys
// follow Trinity's EID: `group` = tid (batch/task), `run` = rid (batch/task/run), `run_step` orders the
// steps of a run, `anchor` is GiGPO's environment-state key. Formulas: docs/algorithms.md.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithm/metrics.h"
#include "algorithm/registry.h"
#include "core/rng.h"

namespace trinity::algo {

enum AdvNeed : unsigned {
  kAdvNeedOldLogprob = 1u << 0,
  kAdvNeedTeacher = 1u << 1,
  kAdvNeedValues = 1u << 2,
  kAdvNeedRun = 1u << 3,
  kAdvNeedAnchor = 1u << 4,
  kAdvNeedLengths = 1u << 5,
  kAdvNeedEntropy = 1u << 6,   // clipb, clipv
  kAdvNeedNec = 1u << 7,       // clipv
  kAdvNeedBaseline = 1u << 8,  // remax
};

struct AdvInput {
  int64_t B = 0, T = 0;
  std::span<const float> rewards;          // [B] scalar reward per experience (required)
  std::span<const float> token_rewards;    // [B, T] optional; default: reward at the last response token
  std::span<const float> mask;             // [B, T] action mask (required)
  std::span<const int64_t> lengths;        // [B] response length ≤ T; default: last masked t + 1
  std::span<const float> old_logprob;      // [B, T] rollout logprobs
  std::span<const float> ref_logprob;      // [B, T] reference logprobs (KL reward penalty)
  std::span<const float> teacher_logprob;  // [B, T]
  std::span<const float> values;           // [B, T] critic values
  std::span<const std::string> group;      // [B] task group (tid); default: one group per experience
  std::span<const std::string> run;        // [B] run id (rid); default: one run per experience
  std::span<const int64_t> run_step;       // [B] step within the run; default: list order
  std::span<const std::string> anchor;     // [B] GiGPO anchor state
  std::span<const float> entropy;          // [B, T] current-policy entropy H_t (clipb, clipv)
  std::span<const float> nec;              // [B, T] N_t = H·Σp² + Σp²·log p over the vocabulary (clipv)
  std::span<const float> reward_baseline;  // [B] ReMax baseline b (info.reward_baseline)

  size_t at(int64_t b, int64_t t) const { return static_cast<size_t>(b * T + t); }
  int64_t length(int64_t b) const;  // response length of row b
  // Throws ValueError/ShapeError naming `who` for an empty batch or a missing/mis-sized input.
  void validate(const char* who, unsigned needs) const;
};

struct AdvOutput {
  std::vector<float> advantages;  // [B, T] (0 where mask is 0 and for dropped rows)
  std::vector<float> returns;     // [B, T]
  std::vector<uint8_t> keep;      // [B] 0 = dropped (e.g. zero-variance group under std_threshold)
  std::vector<float> mask;        // [B, T] the edited action mask (clipb, clipv drop tokens);
                                  // empty = unchanged
  std::vector<int64_t> rows;      // the output batch as input row indices (kept rows, in order; with
                                  // duplicate_experiences, copies of surviving groups are appended)
  Metrics metrics;                // unprefixed names (Algorithm adds experience_pipeline/ etc.)
};

class AdvantageFn {
 public:
  virtual ~AdvantageFn() = default;
  virtual unsigned needs() const { return 0; }
  // Trinity computes these in the trainer on token-level rewards (so a KL reward penalty applies).
  virtual bool trainer_side() const { return false; }
  virtual AdvOutput compute(const AdvInput& in, Rng& rng) const = 0;
};

const Registry<AdvantageFn>& advantage_registry();  // kind "advantage_fn"

// Why kAdvNeedNec (clipv) cannot run in trinity's trainer, for the trainer's and the config's errors.
inline constexpr const char* kNecUnsupported =
    "needs the per-token nec = H·Σp² + Σp²·log p over the vocabulary from the actor forward (Trinity-RFT gets "
    "it from the patched examples/entropy/clipv_dp_actor.py); trinity's LM head returns logprob and entropy "
    "only, so clipv is not supported in training (use clipb)";

// Helpers shared by the advantage files.
namespace adv_detail {
// Indices of each distinct key, groups in order of first appearance; empty keys -> one per row.
std::vector<std::vector<int64_t>> group_rows(std::span<const std::string> keys, int64_t B);
double mean(const std::vector<double>& v);
double std_unbiased(const std::vector<double>& v);    // 0 for fewer than 2 values
double std_population(const std::vector<double>& v);  // 0 for no values
// Fills advantages/returns = a_b·m_bt for row b, keep = 1.
void broadcast(const AdvInput& in, int64_t b, double a, AdvOutput& out);
AdvOutput make_output(const AdvInput& in);  // zeros, keep = 0
void finish_rows(AdvOutput& out);           // rows = kept indices in order (if rows empty)
// Token rewards [B, T]: given ones, or the scalar reward at position length(b) − 1.
std::vector<double> token_rewards(const AdvInput& in);
void add_stats(Metrics& m, const std::string& name, const std::vector<double>& v);  // /mean,/max,/min
// τ·(logsumexp(v/τ) − log n): OPMD's logavgexp baseline.
double log_mean_exp(const std::vector<double>& v, double tau);
// The DataProto score of each row: Σ_t token_rewards[b, t] when token rewards are given (after a KL
// reward penalty they always are), else the scalar reward (= the sum of the placed reward).
std::vector<double> sequence_scores(const AdvInput& in);
// Trinity's deprecated GRPOAdvantageFn (advantage_verl.cpp): a = (s − mean_g s)/(std_g s + ε) over the
// scores s grouped by uid (= task group), unbiased std, a group of one gets mean 0, std 1; fills
// advantages = returns = a·m and keeps every row. Returns the per-group means and stds.
void grpo_verl(const AdvInput& in, double eps, AdvOutput& out);
}  // namespace adv_detail

void add_group_advantages(std::vector<RegistryEntry<AdvantageFn>>& out);  // advantage_group.cpp
void add_multistep_advantages(std::vector<RegistryEntry<AdvantageFn>>& out);  // advantage_multistep.cpp
void add_token_advantages(std::vector<RegistryEntry<AdvantageFn>>& out);  // advantage_token.cpp
void add_verl_advantages(std::vector<RegistryEntry<AdvantageFn>>& out);   // advantage_verl.cpp
void add_entropy_advantages(std::vector<RegistryEntry<AdvantageFn>>& out);  // advantage_entropy.cpp

}  // namespace trinity::algo
