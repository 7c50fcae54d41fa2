// Learning-rate schedule: linear warmup, then linear or cosine decay to lr * min_lr_ratio.
#ifndef GMLP_PRETRAIN_SCHEDULE_H_
#define GMLP_PRETRAIN_SCHEDULE_H_

#include <cstdint>
#include <string>

namespace gmlp::pretrain {

struct ScheduleOptions {
  double lr = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  std::string kind = "linear";  // linear | cosine
  double min_lr_ratio = 0.0;
};

// Learning rate of optimizer step `step` (0-based). Warmup: lr * (step + 1) / warmup_steps, so
// step warmup_steps - 1 reaches the peak; then decay over the remaining steps, reaching
// lr * min_lr_ratio at step total_steps (one past the last step).
double LearningRate(const ScheduleOptions& options, int64_t step);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_SCHEDULE_H_
