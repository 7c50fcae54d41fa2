// LayerNorm on the CPU, computed in float, alone or fused with what comes before it.
//
// ATen's bf16 layer_norm on the CPU (LibTorch 1.13) is 17x slower than its fp32 one, so
// LayerNorm used to cast bf16 inputs to fp32 and normalize there: a cast in, an fp32 output that
// the next matmul casts back to bf16, and the same two casts on the gradients in backward. This
// kernel reads the bf16 input once per pass, writes the bf16 output (the same bits the fp32
// output's cast would give, up to the summation order of the statistics), and in backward reads
// the bf16 gradient and writes the bf16 input gradient. Its fused forms also run in float32
// (where users without bf16 hardware train): GELU before the norm, or the residual add, in the
// same pass. Weight and bias stay fp32, and their gradients are summed in fixed blocks of rows,
// so they do not depend on the thread count.
#ifndef GMLP_KERNELS_LAYER_NORM_CPU_H_
#define GMLP_KERNELS_LAYER_NORM_CPU_H_

#include <torch/torch.h>

#include <utility>

namespace gmlp::kernels::cpu {

// x (N, d) bf16 or float32 on the CPU, weight and bias (d) float32: LayerNorm over d, bf16
// (N, d). Differentiable in all three; x's gradient has x's dtype. A float32 x is the pre-LN
// blocks' residual stream, whose normalized copy only feeds matmuls that autocast runs in bf16:
// writing it in bf16 saves the fp32 output and the matmuls' casts of it (and their gradients').
torch::Tensor LayerNormBf16(const torch::Tensor& x_ND, const torch::Tensor& weight_D,
                            const torch::Tensor& bias_D, double eps);

// LayerNorm(GELU(y + gelu_bias)) with y (N, d) bf16 or float32, gelu_bias float32 (d) or
// undefined (none: the bias was added by the matmul), weight and bias float32 (d): gMLP's
// f(Z2) = W LayerNorm(Z2) + b begins with the LayerNorm of Z2 = GELU(U2 x), which is read by
// nothing else. Done in one pass, Z2 (N, d) is neither written nor read back: GELU is recomputed
// from y in backward (as gelu_cpu.h's backward does), where the normalized gradient goes on
// through GELU' in the same pass. Returns y's dtype; differentiable in all four (y's gradient
// has y's dtype).
torch::Tensor BiasGeluLayerNorm(const torch::Tensor& y_ND, const torch::Tensor& gelu_bias_D,
                                const torch::Tensor& weight_D, const torch::Tensor& bias_D,
                                double eps);

// (x + delta, LayerNorm(x + delta)) with x (N, d) float32, delta (N, d) bf16 or float32, weight
// and bias float32 (d): a pre-LN block's residual add and the LayerNorm that reads it, in one
// pass. The sum is float32 (what x + delta gives, exactly), the normalized rows delta's dtype
// (bf16 as LayerNormBf16 of the sum). Written once and never read back just to be normalized;
// in backward one pass adds the sum's own gradient to the normalization's and writes it for x
// and, for a bf16 delta, in bf16 for delta (what autograd would do with an add, a sum of two
// gradients and a cast; a float32 delta's gradient is x's, the same tensor). Differentiable in
// all four.
std::pair<torch::Tensor, torch::Tensor> AddLayerNorm(const torch::Tensor& x_ND,
                                                     const torch::Tensor& delta_ND,
                                                     const torch::Tensor& weight_D,
                                                     const torch::Tensor& bias_D, double eps);

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_LAYER_NORM_CPU_H_
