// The ops that the encoders, heads, losses and optimizers run, each choosing between gmlp's own
// CPU kernel (cpu/ files of this folder) and ATen in one place: here. Callers never test a
// tensor's device or dtype; the table of what runs where is in kernels/README.md.
//
// The policy (policy.h) picks between the two process-wide: `--kernels=auto|aten`. Every op
// is differentiable like the composition it stands for; where a kernel promises the same bits
// as ATen it says so in its header, elsewhere the two agree to rounding.
#ifndef GMLP_KERNELS_OPS_H_
#define GMLP_KERNELS_OPS_H_

#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/policy.h"

namespace gmlp::kernels {

// ---- Matrix products: as torch::linear, torch::addmm (torch::mm without a bias) and
// torch::matmul of two equally batched operands (no broadcasting).
torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias = {});
torch::Tensor AddMm(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b);
torch::Tensor BatchedMm(const torch::Tensor& a, const torch::Tensor& b);

// ---- LayerNorm over the last dimension, weight and bias (d) float32. Reduced-precision inputs
// are normalized in float (CPU autocast in LibTorch 1.13 would run it in bf16, which loses small
// variances). A bf16 input gives a bf16 output where the kernel runs, float32 elsewhere.
// `feeds_matmuls` marks a norm whose output only feeds matmuls (a pre-LN block's): under CPU bf16
// autocast its float32 input is then written in bf16, the dtype the matmuls would cast it to.
torch::Tensor LayerNorm(const torch::Tensor& x, const torch::Tensor& weight,
                        const torch::Tensor& bias, double eps, bool feeds_matmuls = false);

// (x + delta, LayerNorm(x + delta)): a residual add and the norm that reads it, in one pass
// where the kernel covers them. An undefined delta is no add: (x, LayerNorm(x)).
std::pair<torch::Tensor, torch::Tensor> AddLayerNorm(const torch::Tensor& x,
                                                     const torch::Tensor& delta,
                                                     const torch::Tensor& weight,
                                                     const torch::Tensor& bias, double eps,
                                                     bool feeds_matmuls = false);

// ---- GELU(x W^T + b), times `gate` when it is defined (gMLP's Z1 * f(Z2)), and
// LayerNorm(GELU(x W^T + b)) (gMLP's LayerNorm(Z2)): the bias, GELU, the gate and the norm in one
// pass after the product where the kernel covers them, so GELU's output is never stored.
torch::Tensor LinearGelu(const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias, const torch::Tensor& gate = {});
torch::Tensor LinearGeluLayerNorm(const torch::Tensor& x, const torch::Tensor& weight,
                                  const torch::Tensor& bias, const torch::Tensor& norm_weight,
                                  const torch::Tensor& norm_bias, double eps);

// ---- Softmax attention of `heads` heads over the sequence-major rows [q | k | v]
// (n*B, 3 * heads * k) of B sequences of length n (row i*B + b), scores scaled by 1/sqrt(k), plus
// score_bias (heads, n, n) (ALiBi) and key_bias (B, 1, n) (0 at real keys, a large negative value
// at padded ones) where defined, dropout p on the probabilities when training. Returns the
// sequence-major (n*B, heads * k), head h at columns [h k, (h+1) k).
torch::Tensor Attention(const torch::Tensor& qkv, int64_t n, int64_t B, int64_t heads,
                        const torch::Tensor& key_bias, const torch::Tensor& score_bias,
                        double dropout, bool train);

// ---- Inverted dropout: x when !train or p == 0, else x * mask / (1 - p).
torch::Tensor Dropout(const torch::Tensor& x, double p, bool train);

// ---- Softmax cross-entropy of logits (M, V) against labels (M) int64: the float32 sum of the
// M losses (differentiable; a row with a NaN or infinite logit makes it NaN) and each row's
// argmax (int64, the first maximum).
struct CrossEntropySum {
  torch::Tensor loss;
  torch::Tensor argmax;
};
CrossEntropySum SumCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels);

// ---- The optimizer's passes over every parameter. AdamW updates params[i] with grads[i] and the
// moments exp_avg[i], exp_avg_sq[i] in place (decoupled weight decay weight_decay[i]; bias
// corrections 1 - beta^t given), in the order of PyTorch's composition. LibTorch >= 2.4 has its
// own fused AdamW, which pretrain/optimizer.cc prefers under both policies.
struct AdamWArgs {
  double lr = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-6;
  double bias_correction1 = 1, bias_correction2 = 1;  // 1 - beta^t
};
void AdamW(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
           const std::vector<torch::Tensor>& exp_avg, const std::vector<torch::Tensor>& exp_avg_sq,
           const std::vector<double>& weight_decay, const AdamWArgs& args);

// The global L2 norm of `grads` (float64, on their device; NaN or inf if any element is), and
// when max_norm > 0 and the norm is finite and above it, every gradient scaled in place by
// max_norm / (norm + 1e-6).
torch::Tensor ClipByGlobalNorm(const std::vector<torch::Tensor>& grads, double max_norm);

}  // namespace gmlp::kernels

#endif  // GMLP_KERNELS_OPS_H_
