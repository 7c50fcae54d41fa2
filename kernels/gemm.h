// The encoders' matrix products, differentiable, on the BLAS's fast path.
//
// OpenBLAS (0.3.21, the BLAS of Debian's LibTorch 1.13) scales the output by beta before it
// accumulates the product, and for beta != 1 that pass is slow: at a training step's shapes an
// fp32 `mm` (beta = 0) runs at half the rate of the same product accumulated into a zeroed
// buffer (beta = 1), 79 against 156 GFLOP/s for (4096 x 128) @ (128 x 384) on 2 Zen 2 cores
// (cblas_sgemm itself, bench/blas_beta.py), and `bmm` at attention's shapes at 0.5-0.6x of
// `baddbmm_` into zeros (bench/RESULTS.md, 2026-12-04). `addmm` with a bias already takes the
// fast path (the bias is copied in, then beta = 1), but autograd's backward of every linear layer
// and of gMLP's spatial projection is two `mm`s. So for float32 CPU tensors outside autocast these
// products are custom autograd functions whose forward and backward accumulate every product into
// a zeroed output: the same products (each output is 0 plus the dot product). ops.h sends
// float32 CPU operands outside autocast here; everything else (bf16 autocast, which runs oneDNN;
// GPUs; float64) to ATen's addmm, mm, linear and matmul.
#ifndef GMLP_KERNELS_GEMM_H_
#define GMLP_KERNELS_GEMM_H_

#include <torch/torch.h>

namespace gmlp::kernels::cpu {

// Operands are float32 CPU tensors.
//
// bias + a @ b: a (M, K), b (K, N), bias broadcastable to (M, N) or undefined (none), as
// torch::addmm / torch::mm.
torch::Tensor AddMm(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b);

// x W^T + bias: x (..., in), weight (out, in), bias (out) or undefined, as torch::linear.
torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias = {});

// a (..., M, K) @ b (..., K, N) with the same leading dimensions (no broadcasting), as
// torch::matmul: attention's batched products (the same beta applies to each matrix of the
// batch).
torch::Tensor BatchedMm(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_GEMM_H_
