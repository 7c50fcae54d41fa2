// GELU with the bias add before it, and optionally gMLP's gating product after it, on CPU
// activations in bf16 or float32: computed in float, one pass forward and one backward.
//
// Under CPU bf16 autocast GELU(linear(x)) [* gate] ran as ATen's ops: the bias cast to bf16 and
// added by addmm, gelu, the product, and in backward mul twice, gelu_backward, the bias gradient
// summed in bf16 and cast to fp32. LibTorch 1.13's bf16 gelu and gelu_backward convert between
// bf16 and float around every arithmetic step; they took 14 ms of a 110 ms gmlp-tiny bf16 step.
// There the matmul runs without its bias (linear's bias-free form) and one kernel does the rest:
//
//   forward:  a = y + bias (float);  out = GELU(a) [* gate]
//   backward: dy = dout [* gate] * GELU'(a);  dbias = sum over rows of dy;  dgate = dout * GELU(a)
//
// In float32 (LinearGelu, layers.h) the kernel is used with the gate only: there it replaces
// gelu, gelu_backward and the gate's two products by one pass each way (1.3-1.5x ATen at
// gmlp-tiny and -small shapes), while GELU alone is no faster than ATen's float32 kernels. It
// adds the bias there too, after gemm.h's bias-free product (0.3-1.3% faster steps than the bias
// in the matmul). All measured in bench/RESULTS.md.
//
// GELU is the exact (erf) form, as torch::gelu's default: erf from Abramowitz & Stegun 7.1.26
// (absolute error <= 1.5e-7, computed as erfc for negative inputs so small Phi(a) keep their
// relative accuracy) with cpu_kernel_util.h's exp. The bias gradient is summed in float over
// fixed blocks of rows, added in block order: the same bits at any thread count.
#ifndef GMLP_KERNELS_GELU_CPU_H_
#define GMLP_KERNELS_GELU_CPU_H_

#include <torch/torch.h>

namespace gmlp::kernels::cpu {

// GELU(y + bias): y (N, F) bf16 or float32 on the CPU, bias (F) float32 or undefined (no bias).
// Returns y's dtype (N, F); differentiable in y and bias (whose gradient is float32).
torch::Tensor BiasGelu(const torch::Tensor& y_NF, const torch::Tensor& bias_F);

// GELU(y + bias) * gate, with gate (N, F) of y's dtype: gMLP's Z1 * f(Z2) without materializing
// Z1. Differentiable in all three.
torch::Tensor BiasGeluGate(const torch::Tensor& y_NF, const torch::Tensor& bias_F,
                           const torch::Tensor& gate_NF);

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_GELU_CPU_H_
