// AdamW, clipping and LR schedules (see optimizer.h).
#include "trainer/optimizer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"

namespace trinity::trainer {

AdamW::AdamW(int64_t n_params, AdamWConfig cfg)
    : cfg_(cfg), m_(static_cast<size_t>(n_params), 0.0f), v_(static_cast<size_t>(n_params), 0.0f) {}

void AdamW::step(float* params, const float* grads, double lr) {
  ++t_;
  const float b1 = static_cast<float>(cfg_.beta1), b2 = static_cast<float>(cfg_.beta2);
  const float decay = static_cast<float>(1.0 - lr * cfg_.weight_decay);
  const double bc1 = 1.0 - std::pow(cfg_.beta1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, static_cast<double>(t_));
  const float step_size = static_cast<float>(lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float eps = static_cast<float>(cfg_.eps);
  const int64_t n = static_cast<int64_t>(m_.size());
  float* m = m_.data();
  float* v = v_.data();
  const int64_t blk = 1 << 14;
  parallel_for((n + blk - 1) / blk, [&](int64_t b) {
    const int64_t e = std::min(n, (b + 1) * blk);
    for (int64_t i = b * blk; i < e; ++i) {
      const float g = grads[i];
      float p = params[i] * decay;
      const float mi = m[i] * b1 + g * (1.0f - b1);
      const float vi = v[i] * b2 + g * g * (1.0f - b2);
      m[i] = mi;
      v[i] = vi;
      p -= step_size * mi / (std::sqrt(vi) / bc2_sqrt + eps);
      params[i] = p;
    }
  });
}

double grad_norm(const float* grads, int64_t n) {
  // Partial sums per fixed block, added in block order: independent of threads and scheduling.
  constexpr int64_t kBlock = 65536;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  parallel_for(blocks, [&](int64_t b) {
    double s = 0.0;
    for (int64_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) s += static_cast<double>(grads[i]) * grads[i];
    partial[static_cast<size_t>(b)] = s;
  });
  double total = 0.0;
  for (double s : partial) total += s;
  return std::sqrt(total);
}

double clip_grad_norm(float* grads, int64_t n, double max_norm) {
  const double norm = grad_norm(grads, n);
  if (max_norm <= 0 || !std::isfinite(norm)) return norm;
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) {
    const float c = static_cast<float>(coef);
    parallel_for((n + 65535) / 65536, [&](int64_t b) {
      const int64_t e = std::min(n, (b + 1) * 65536);
      for (int64_t i = b * 65536; i < e; ++i) grads[i] *= c;
    });
  }
  return norm;
}

double LrSchedule::factor(int64_t step) const {
  if (step < warmup_steps)
    return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
  if (type == "constant") return 1.0;
  // Progress is clamped at 1: verl's formula lets cos() rise again past total_steps (a run that
  // outlives its schedule would get its lr back); we hold min_lr_ratio instead.
  const double progress = std::min(
      1.0, static_cast<double>(step - warmup_steps) /
               static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps)));
  const double x = std::cos(M_PI * progress);
  return std::max(min_lr_ratio, x * (1.0 - min_lr_ratio) * 0.5 + (1.0 + min_lr_ratio) * 0.5);
}

void LrSchedule::validate() const {
  if (type != "constant" && type != "cosine")
    throw ConfigError("optimizer", strcat("optimizer.lr_scheduler_type: unknown value '", type,
                                          "'; expected 'constant' or 'cosine'"));
  if (min_lr_ratio < 0 || min_lr_ratio > 1)
    throw ConfigError("optimizer", strcat("optimizer.min_lr_ratio must be in [0, 1], got ", min_lr_ratio));
}

}  // namespace trinity::trainer
