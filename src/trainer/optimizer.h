// AdamW exactly as torch.optim.AdamW (decoupled weight decay, bias-corrected moments, eps added
// after the square root), global gradient-norm clipping as torch.nn.utils.clip_grad_norm_, and the
// learning-rate schedules of Trinity's `algorithm.optimizer` keys (verl's implementations):
//   constant: min(1, step / warmup);  cosine: warm-up, then
//   max(min_lr_ratio, cos(pi * progress) * (1 - min_lr_ratio) / 2 + (1 + min_lr_ratio) / 2).
// One fused pass over the flat parameter buffer per step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trinity::trainer {

struct AdamWConfig {
  double lr = 1e-6;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

class AdamW {
 public:
  AdamW(int64_t n_params, AdamWConfig cfg);
  // One update with learning rate `lr` (the schedule's value for this step).
  void step(float* params, const float* grads, double lr);
  int64_t steps() const { return t_; }
  const AdamWConfig& config() const { return cfg_; }
  // Moments, for checkpointing optimizer state.
  std::vector<float>& m() { return m_; }
  std::vector<float>& v() { return v_; }
  void set_steps(int64_t t) { t_ = t; }

 private:
  AdamWConfig cfg_;
  int64_t t_ = 0;
  std::vector<float> m_, v_;
};

// L2 norm of the whole gradient (accumulated in double).
double grad_norm(const float* grads, int64_t n);
// Scales grads by max_norm / (norm + 1e-6) when that is < 1 (torch semantics); returns the norm
// before clipping. max_norm <= 0 disables clipping. A non-finite norm leaves grads untouched.
double clip_grad_norm(float* grads, int64_t n, double max_norm);

struct LrSchedule {
  std::string type = "constant";  // "constant" or "cosine"
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  double min_lr_ratio = 0.0;
  // Multiplier of the base lr at optimizer step `step` (0-based), as torch LambdaLR applies it.
  double factor(int64_t step) const;
  // Throws ConfigError naming `optimizer.lr_scheduler_type` for unknown types.
  void validate() const;
};

}  // namespace trinity::trainer
