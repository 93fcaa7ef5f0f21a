// BOTS' pass-rate estimator and selection (trinity-rft.md §4.5, Trinity-RFT's
// InterpolationBetaPREstimator and DifficultyBasedSelector). Each of the N tasks keeps Beta(α, β),
// starting at (1, 1), and two feature columns f₀, f₁ (e.g. a weak and a strong reference model's pass
// rates). feedback(idx, pr) with the observed mean rewards pr of the selected tasks:
//   cap = (mean(pr) − mean f₀[idx]) / (mean f₁[idx] − mean f₀[idx] + 1e-6), EMA 0.9 after the first
//   p̃ = clip((f₁ − f₀)·cap + f₀, 0, 1) for every task, replaced by pr on idx
//   s̄ = pr·m, f̄ = (1 − pr)·m on idx (0 elsewhere)
//   α ← (1−λ)α + λ + (1−ρ)s̄ + ρ·p̃·m;   β ← (1−λ)β + λ + (1−ρ)f̄ + ρ(1−p̃)·m
//   adaptive_rho: ρ ← ρ/2 when mean |p̃[idx] − pr| ≥ 0.25 (p̃ before the replacement)
// select(k): score = −|target_reward − p̂| with p̂ = α/(α+β), or p̂ ~ Beta(α, β) when do_sample
// (Thompson sampling; RNG seed = seed + current_index); τ = 0 takes the k best scores (ties: lower
// row first), τ > 0 draws k rows without replacement from softmax(score/τ) (seed + current_index).
// Unlike Trinity-RFT, whose resume restores only current_index, the estimator (α, β, cap, ρ) is part
// of the state, so a resumed run selects what the uninterrupted run would have.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trinity::buffer {

struct DifficultyParams {
  double m = 16, lamb = 0.2, rho = 0.2;
  bool adaptive_rho = false;
  double target_reward = 1.0, tau = 1.0;
  bool do_sample = false;
  // Parses data_selector.kwargs (JSON object text); ConfigError naming `taskset` and the bad key.
  static DifficultyParams from_kwargs(const std::string& kwargs, const std::string& taskset);
};

class DifficultyEstimator {
 public:
  // features: [N][2] (f₀, f₁) per task.
  DifficultyEstimator(std::vector<std::array<double, 2>> features, DifficultyParams p);
  size_t size() const { return alpha_.size(); }
  void feedback(const std::vector<int64_t>& rows, const std::vector<double>& pass_rates);
  // k rows (k <= size()) by the rule above; `current_index` seeds the RNG as Trinity-RFT does.
  std::vector<int64_t> select(size_t k, uint64_t seed, int64_t current_index) const;
  // −|target_reward − p̂| per task [N] (p̂ drawn from Beta(α, β) when do_sample).
  std::vector<double> scores(uint64_t seed, int64_t current_index) const;
  // Point estimates α/(α+β) [N].
  std::vector<double> predicted() const;
  const std::vector<double>& alphas() const { return alpha_; }
  const std::vector<double>& betas() const { return beta_; }
  double rho() const { return p_.rho; }
  std::optional<double> cap() const { return cap_; }
  // {"alphas": [...], "betas": [...], "cap": x|null, "rho": r}; load_state checks the sizes.
  std::string state() const;
  void load_state(const std::string& state, const std::string& where);

 private:
  std::vector<std::array<double, 2>> f_;
  DifficultyParams p_;
  std::vector<double> alpha_, beta_;
  std::optional<double> cap_;
};

}  // namespace trinity::buffer
