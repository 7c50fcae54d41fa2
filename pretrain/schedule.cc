#include "pretrain/schedule.h"

#include <algorithm>
#include <cmath>

namespace gmlp::pretrain {

double LearningRate(const ScheduleOptions& o, int64_t step) {
  if (step < o.warmup_steps) {
    return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  }
  const int64_t decay_steps = o.total_steps - o.warmup_steps;
  if (decay_steps <= 0) return o.lr;
  const double progress =
      std::clamp(static_cast<double>(step - o.warmup_steps) / decay_steps, 0.0, 1.0);
  const double floor = o.lr * o.min_lr_ratio;
  const double shape =
      o.kind == "cosine" ? 0.5 * (1.0 + std::cos(M_PI * progress)) : 1.0 - progress;
  return floor + (o.lr - floor) * shape;
}

}  // namespace gmlp::pretrain
