// AdamW and LAMB over two parameter groups (decayed: matrices and embeddings; not decayed:
// biases and LayerNorm weights, i.e. every tensor of rank < 2), with state that checkpoints
// save and restore bit for bit.
//
// AdamW (Loshchilov & Hutter 2019), as torch.optim.AdamW computes it:
//   p <- p (1 - lr wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
//   p <- p - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// LAMB (You et al. 2020, Algorithm 2, with Adam's bias correction):
//   u = m_hat / (sqrt(v_hat) + eps) + wd p;  r = ||p|| / ||u|| (1 when either norm is 0)
//   p <- p - lr r u
#ifndef GMLP_PRETRAIN_OPTIMIZER_H_
#define GMLP_PRETRAIN_OPTIMIZER_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pretrain/train_config.h"  // OptimizerOptions

namespace gmlp::pretrain {

// True for tensors that get weight decay: rank >= 2 (dense weights, embeddings, the SGU's
// spatial matrix); biases and LayerNorm gains/offsets are rank 1.
bool DecaysWeight(const torch::Tensor& param);

class Optimizer {
 public:
  // `params` must be unique tensors (a tied weight once). Parameters without a gradient at a
  // step are skipped (their moments are not advanced).
  Optimizer(std::vector<torch::Tensor> params, OptimizerOptions options);

  // One update at learning rate `lr` using each parameter's .grad(). `skip`, when defined, is a
  // scalar tensor on the parameters' device: where it is non-zero the update leaves weights and
  // moments as they were (decided on the device, without a host sync; AdamW on LibTorch >= 2.4,
  // elsewhere the caller must not step).
  void Step(double lr, const torch::Tensor& skip = {});
  // True when Step honours `skip` on the device (the fused AdamW of LibTorch >= 2.4).
  bool SkipsOnDevice() const;

  int64_t step_count() const { return step_; }
  const std::vector<torch::Tensor>& params() const { return params_; }

  // Moments and step count, in a torch::serialize archive (bitwise round trip).
  absl::Status Save(const std::string& path) const;
  absl::Status Load(const std::string& path);

 private:
  std::vector<torch::Tensor> params_;
  OptimizerOptions options_;
  std::vector<torch::Tensor> exp_avg_;
  std::vector<torch::Tensor> exp_avg_sq_;
  std::vector<torch::Tensor> state_steps_;  // float32 scalars for the fused kernel
  int64_t step_ = 0;

  void FusedAdamWStep(double lr, const torch::Tensor& skip);
};

// Clips the global L2 norm of the gradients of `params` to `max_norm` (no-op when max_norm is 0)
// and returns the norm before clipping (non-finite if any gradient is), as a float64 scalar
// tensor on the gradients' device: nothing waits for the device (kernels::ClipByGlobalNorm).
torch::Tensor ClipGradNormAsync(const std::vector<torch::Tensor>& params, double max_norm);
// The same, returning the norm on the host.
double ClipGradNorm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_OPTIMIZER_H_
