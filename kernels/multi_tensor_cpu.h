// AdamW and gradient clipping over all fp32 CPU parameters at once: one parallel region each,
// instead of ATen's per-tensor ops (nine or so per parameter for AdamW, three for clipping, each
// a separate pass over memory and a separate dispatch; most parameters of the small presets are
// too small for ATen to split them across threads). The tensors are cut into fixed chunks, so
// the results do not depend on the thread count. Used by Optimizer and ClipGradNormAsync for
// fp32 CPU tensors (optimizer.h); other devices and dtypes keep ATen's ops.
#ifndef GMLP_KERNELS_MULTI_TENSOR_CPU_H_
#define GMLP_KERNELS_MULTI_TENSOR_CPU_H_

#include <torch/torch.h>

#include <vector>

namespace gmlp::kernels::cpu {

// True when every tensor is a defined, contiguous float32 CPU tensor.
bool AllContiguousFloatCpu(const std::vector<torch::Tensor>& tensors);

struct AdamWStepArgs {
  double lr = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-6;
  double bias_correction1 = 1, bias_correction2 = 1;  // 1 - beta^t
};

// One AdamW step (optimizer.h's equations, in the order of its ATen composition) for every i:
// params[i] with grads[i], moments exp_avg[i] and exp_avg_sq[i], weight decay weight_decay[i].
// All tensors contiguous float32 on the CPU; params[i], grads[i] and the moments the same size.
void AdamWStepCpu(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                  const std::vector<torch::Tensor>& exp_avg,
                  const std::vector<torch::Tensor>& exp_avg_sq,
                  const std::vector<double>& weight_decay, const AdamWStepArgs& args);

// The global L2 norm of `tensors` (float64: squares summed in double), NaN or inf if any
// element is.
double GlobalNormCpu(const std::vector<torch::Tensor>& tensors);

// tensors[i] *= scale, in place.
void ScaleCpu(const std::vector<torch::Tensor>& tensors, float scale);

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_MULTI_TENSOR_CPU_H_
