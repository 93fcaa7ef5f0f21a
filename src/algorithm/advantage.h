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

  size_t at(int64_t b, int64_t t) const { return static_cast<size_t>(b * T + t); }
  int64_t length(int64_t b) const;  // response length of row b
  // Throws ValueError/ShapeError naming `who` for an empty batch or a missing/mis-sized input.
  void validate(const char* who, unsigned needs) const;
};

struct AdvOutput {
  std::vector<float> advantages;  // [B, T] (0 where mask is 0 and for dropped rows)
  std::vector<float> returns;     // [B, T]
  std::vector<uint8_t> keep;      // [B] 0 = dropped (e.g. zero-variance group under std_threshold)
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
}  // namespace adv_detail

void add_group_advantages(std::vector<RegistryEntry<AdvantageFn>>& out);  // advantage_group.cpp
void add_multistep_advantages(std::vector<RegistryEntry<AdvantageFn>>& out);  // advantage_multistep.cpp
void add_token_advantages(std::vector<RegistryEntry<AdvantageFn>>& out);  // advantage_token.cpp

}  // namespace trinity::algo
