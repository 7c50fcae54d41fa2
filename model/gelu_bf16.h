// GELU with the bias add before it, and optionally gMLP's gating product after it, on bf16 CPU
// activations: read and written in bf16, computed in float, one pass forward and one backward.
//
// Under CPU bf16 autocast GELU(linear(x)) [* gate] ran as ATen's ops: the bias cast to bf16 and
// added by addmm, gelu, the product, and in backward mul twice, gelu_backward, the bias gradient
// summed in bf16 and cast to fp32. LibTorch 1.13's bf16 gelu and gelu_backward convert between
// bf16 and float around every arithmetic step; they took 14 ms of a 110 ms gmlp-tiny step. Here
// the matmul runs without its bias (linear's bias-free form) and one kernel does the rest:
//
//   forward:  a = y + bias (float);  out = GELU(a) [* gate]
//   backward: dy = dout [* gate] * GELU'(a);  dbias = sum over rows of dy;  dgate = dout * GELU(a)
//
// GELU is the exact (erf) form, as torch::gelu's default: erf from Abramowitz & Stegun 7.1.26
// (absolute error <= 1.5e-7, computed as erfc for negative inputs so small Phi(a) keep their
// relative accuracy) with cpu_kernel_util.h's exp. The bias gradient is summed in float over
// fixed blocks of rows, added in block order: the same bits at any thread count.
#ifndef GMLP_MODEL_GELU_BF16_H_
#define GMLP_MODEL_GELU_BF16_H_

#include <torch/torch.h>

namespace gmlp::model {

// GELU(y + bias): y (N, F) bf16 on the CPU, bias (F) float32. Returns bf16 (N, F); differentiable
// in y and bias (whose gradient is float32).
torch::Tensor BiasGeluBf16(const torch::Tensor& y_NF, const torch::Tensor& bias_F);

// GELU(y + bias) * gate, with gate (N, F) bf16: gMLP's Z1 * f(Z2) without materializing Z1.
// Differentiable in all three.
torch::Tensor BiasGeluGateBf16(const torch::Tensor& y_NF, const torch::Tensor& bias_F,
                               const torch::Tensor& gate_NF);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_GELU_BF16_H_
