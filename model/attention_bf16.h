// aMLP's tiny attention core on bf16 CPU activations, fused: one head of width a over the
// sequence-major (N, 3a) rows [q | k | v] of B sequences of length n (row i*B + b, N = n*B),
// padded keys masked by an additive key bias:
//
//   forward:  S = q k^T / sqrt(a) + key_bias (float);  P = softmax(S) (bf16, saved);  O = P v
//   backward: dP = dO v^T;  dS = P * (dP - rowsum(P * dP)) / sqrt(a);
//             dq = dS k;  dk = dS^T q;  dv = P^T dO
//
// Under CPU bf16 autocast the ATen composition (unbind, transposes, the scale, two bmm on
// contiguous copies, the key-bias add, softmax, the output transpose's copy, and in backward
// their mirrors and the stack of the three gradients) ran as some fifteen ops each way. Here
// one task handles one sequence: its q, k and v are packed once, the products are small GEMMs on
// AVX-512 BF16's dot-product instruction (vdpbf16ps: products of bf16 pairs summed in float),
// the scores stay float through the softmax, and O and the gradients are written straight into
// the sequence-major layout. Without AVX-512 BF16 a portable loop computes the same sums in
// float (in another order). One thread computes each sequence: the same bits at any thread count.
#ifndef GMLP_MODEL_ATTENTION_BF16_H_
#define GMLP_MODEL_ATTENTION_BF16_H_

#include <torch/torch.h>

#include <cstdint>

namespace gmlp::model {

// softmax(q k^T / sqrt(a) + key_bias) v: qkv (n*B, 3a) bf16 on the CPU, key_bias (B, 1, n) of a
// floating dtype (0 at real keys, a large negative value at padded ones) or undefined. Returns
// (n*B, a) bf16, sequence-major; differentiable in qkv.
torch::Tensor TinyAttentionBf16(const torch::Tensor& qkv_N3A, int64_t n, int64_t B,
                                const torch::Tensor& key_bias_B1N);

// The kernel's matrix products: the AVX-512 BF16 ones where the CPU has that instruction set
// (kAuto), or the portable loop everywhere (kPortable: for tests, which check both).
enum class AttentionGemm { kAuto, kPortable };
void SetAttentionGemmForTesting(AttentionGemm gemm);
// Whether kAuto uses AVX-512 BF16 on this CPU.
bool AttentionUsesAvx512Bf16();

}  // namespace gmlp::model

#endif  // GMLP_MODEL_ATTENTION_BF16_H_
