// Softmax attention on bf16 CPU activations, fused: H heads of width k over the sequence-major
// (N, 3Hk) rows [q | k | v] of B sequences of length n (row i*B + b, N = n*B), with an additive
// per-head score bias (ALiBi), padded keys masked by an additive key bias, and dropout on the
// probabilities. Per head:
//
//   forward:  S = q k^T / sqrt(k) + score_bias + key_bias (float);  P = softmax(S) (bf16, saved);
//             O = dropout(P) v
//   backward: dP = mask * (dO v^T);  dS = P * (dP - rowsum(P * dP)) / sqrt(k);
//             dq = dS k;  dk = dS^T q;  dv = dropout(P)^T dO
//
// Used by aMLP's tiny attention (one 64-wide head) and the Transformer's self-attention. Under
// CPU bf16 autocast the ATen composition (unbind, transposes, the scale, two bmm on contiguous
// copies, the bias adds, softmax, dropout, the output transpose's copy, and in backward their
// mirrors and the stack of the three gradients) ran as some fifteen ops each way. Here one task
// handles one (sequence, head): its q, k and v are packed once, the products are small GEMMs on
// AVX-512 BF16's dot-product instruction (vdpbf16ps: products of bf16 pairs summed in float), the
// scores stay float through the softmax, and O and the gradients are written straight into the
// sequence-major layout. Without AVX-512 BF16 a portable loop computes the same sums in float (in
// another order). One thread computes each task: the same bits at any thread count. The dropout
// mask is cpu::Dropout's on the contiguous (B, H, n, n) probabilities (dropout.h), recomputed
// in backward from its seed.
#ifndef GMLP_KERNELS_ATTENTION_BF16_H_
#define GMLP_KERNELS_ATTENTION_BF16_H_

#include <torch/torch.h>

#include <cstdint>

namespace gmlp::kernels::cpu {

// qkv (n*B, 3 * heads * k) bf16 on the CPU; key_bias (B, 1, n) of a floating dtype (0 at real
// keys, a large negative value at padded ones) or undefined; score_bias (heads, n, n) or
// undefined; dropout on the probabilities when train. Returns (n*B, heads * k) bf16,
// sequence-major, head h at columns [h k, (h+1) k); differentiable in qkv.
torch::Tensor AttentionBf16(const torch::Tensor& qkv_NW, int64_t n, int64_t B, int64_t heads,
                            const torch::Tensor& key_bias_B1N, const torch::Tensor& score_bias_Hnn,
                            double dropout, bool train);

// aMLP's tiny attention: one head, no score bias, no dropout.
torch::Tensor TinyAttentionBf16(const torch::Tensor& qkv_N3A, int64_t n, int64_t B,
                                const torch::Tensor& key_bias_B1N);

// The kernel's matrix products: the AVX-512 BF16 ones where the CPU has that instruction set
// (kAuto), or the portable loop everywhere (kPortable: for tests, which check both).
enum class AttentionGemm { kAuto, kPortable };
void SetAttentionGemmForTesting(AttentionGemm gemm);
// Whether kAuto uses AVX-512 BF16 on this CPU.
bool AttentionUsesAvx512Bf16();

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_ATTENTION_BF16_H_
