// Inverted dropout with a counter-based mask, for the encoders' training passes.
//
// torch::dropout on CPU draws a Bernoulli mask element by element from one mt19937 stream
// (LibTorch without MKL: single-threaded, ~10 ns per element) and keeps the mask for backward.
// Here the mask bit of element i is a pure function of (seed, i): SplitMix64 of the i-th
// counter, kept when its top 32 bits are >= p * 2^32. So the mask is made on all intra-op
// threads, is never stored (backward recomputes it from the seed), and one 64-bit seed per call,
// drawn from LibTorch's default CPU generator, keeps runs reproducible under torch::manual_seed
// (and the pretrainer's per-step reseeding). Measured: bench/RESULTS.md (Pretraining).
#ifndef GMLP_KERNELS_DROPOUT_H_
#define GMLP_KERNELS_DROPOUT_H_

#include <torch/torch.h>

#include <cstdint>

#include "common/mix64.h"

namespace gmlp::kernels::cpu {

// x unchanged when !train or p == 0; else x * mask / (1 - p), differentiable. CPU tensors of
// any floating type (ops.h sends other devices to torch::dropout).
torch::Tensor Dropout(const torch::Tensor& x, double p, bool train);

// The mask kernel itself, exposed for tests: out = x * keep(seed, i) / (1 - p), x contiguous.
torch::Tensor ApplyDropoutMask(const torch::Tensor& x, double p, uint64_t seed);

// The mask's pieces, for kernels that apply it inside other work (attention_bf16.h) and must
// drop exactly what Dropout would on the same contiguous tensor: one seed per call from
// LibTorch's default CPU generator; element i is kept when the top 32 bits of SplitMix64 at i
// are >= the threshold p * 2^32. Loops over consecutive indices can step the generator's state
// (SplitMix64State, common/mix64.h) by kGoldenGamma and ask DropoutKeepsState.
uint64_t NextDropoutSeed();
uint64_t DropoutThreshold(double p);
inline bool DropoutKeepsState(uint64_t state, uint64_t threshold) {
  return (Mix64(state) >> 32) >= threshold;
}
inline bool DropoutKeeps(uint64_t seed, int64_t i, uint64_t threshold) {
  return DropoutKeepsState(SplitMix64State(seed, static_cast<uint64_t>(i)), threshold);
}

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_DROPOUT_H_
