// Attention's heads from the sequence-major rows [q | k | v], as one copy each way.
#ifndef GMLP_KERNELS_SPLIT_HEADS_H_
#define GMLP_KERNELS_SPLIT_HEADS_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>

namespace gmlp::kernels::cpu {

// Attention's heads from the sequence-major rows [q | k | v] (n*B, 3*H*k) of B sequences of
// length n: q, k and v as contiguous (B, H, n, k) batches, q times q_scale, one copy each way
// (backward writes the three gradients straight into the rows' layout). For the Transformer's
// float32 CPU attention, where ATen's composition (unbind, permutes and the scale, bmm on
// strided operands, and in backward a stack of the three gradients) made the step about 2%
// slower; aMLP's single 64-wide head measured no gain (bench/RESULTS.md, 2026-12-04).
std::array<torch::Tensor, 3> SplitHeads(const torch::Tensor& qkv_NW, int64_t n, int64_t B,
                                        int64_t heads, double q_scale);

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_SPLIT_HEADS_H_
