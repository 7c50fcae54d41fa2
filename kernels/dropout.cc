// Counter-based inverted dropout (see dropout.h).
#include "kernels/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <mutex>

#include "common/mix64.h"
#include "kernels/cpu_kernel_util.h"

namespace gmlp::kernels::cpu {
namespace {

class DropoutFunction : public torch::autograd::Function<DropoutFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               double p, int64_t seed) {
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    return ApplyDropoutMask(x, p, static_cast<uint64_t>(seed));
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const double p = ctx->saved_data["p"].toDouble();
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    return {ApplyDropoutMask(grads[0], p, seed), torch::Tensor(), torch::Tensor()};
  }
};

// The mask loops for the two dtypes training runs in. Each element's decision (DropoutKeeps) is
// one SplitMix64 of its index: with 64-bit vector multiplies (AVX-512DQ) the loop runs 8 lanes
// wide (the scalar loop was 5-6% of a bf16 gmlp-tiny step, bench/RESULTS.md). The loops add
// kGoldenGamma to the generator's state per element rather than multiply each index by it: two
// 64-bit multiplies per element instead of three, each of which AVX2 builds from three 32-bit
// ones (1-1.6% of a transformer-tiny fp32 step there). Every clone computes the same bits.

GMLP_VECTOR_CLONES
void MaskFloat(const float* src, float* dst, int64_t begin, int64_t end, uint64_t seed,
               uint64_t threshold, float scale) {
  uint64_t state = SplitMix64State(seed, begin);
  for (int64_t i = begin; i < end; ++i, state += kGoldenGamma) {
    dst[i] = DropoutKeepsState(state, threshold) ? src[i] * scale : 0.0f;
  }
}

// bf16 as its bits (cpu_kernel_util.h): widened to float, scaled in float, rounded once.
GMLP_VECTOR_CLONES
void MaskBFloat16(const uint16_t* src, uint16_t* dst, int64_t begin, int64_t end, uint64_t seed,
                  uint64_t threshold, float scale) {
  uint64_t state = SplitMix64State(seed, begin);
  for (int64_t i = begin; i < end; ++i, state += kGoldenGamma) {
    const uint16_t out = FloatToBf16Bits(Bf16BitsToFloat(src[i]) * scale);
    dst[i] = DropoutKeepsState(state, threshold) ? out : static_cast<uint16_t>(0);
  }
}

}  // namespace

uint64_t NextDropoutSeed() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

// Kept when the top 32 bits are >= p * 2^32: P(keep) = 1 - p to within 2^-32.
uint64_t DropoutThreshold(double p) {
  return static_cast<uint64_t>(std::llround(p * 4294967296.0));
}

torch::Tensor ApplyDropoutMask(const torch::Tensor& x, double p, uint64_t seed) {
  TORCH_CHECK(p >= 0 && p < 1, "dropout probability must be in [0, 1), got ", p);
  const torch::Tensor in = x.contiguous();
  torch::Tensor out = torch::empty_like(in);
  const int64_t n = in.numel();
  const uint64_t threshold = DropoutThreshold(p);
  // Every dtype scales in float (or double), then rounds once to its own type.
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  constexpr int64_t kGrain = 1 << 14;
  if (in.scalar_type() == at::kFloat) {
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
      MaskFloat(src, dst, begin, end, seed, threshold, scale);
    });
    return out;
  }
  if (in.scalar_type() == at::kBFloat16) {
    const uint16_t* src = Bf16Bits(in);
    uint16_t* dst = Bf16Bits(out);
    at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
      MaskBFloat16(src, dst, begin, end, seed, threshold, scale);
    });
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES_AND(at::kHalf, in.scalar_type(), "gmlp_dropout", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* src = in.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    const auto s = static_cast<acc_t>(1.0 / (1.0 - p));
    at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        dst[i] = DropoutKeeps(seed, i, threshold)
                     ? static_cast<scalar_t>(static_cast<acc_t>(src[i]) * s)
                     : static_cast<scalar_t>(0);
      }
    });
  });
  return out;
}

torch::Tensor Dropout(const torch::Tensor& x, double p, bool train) {
  if (!train || p == 0.0) return x;
  return DropoutFunction::apply(x, p, static_cast<int64_t>(NextDropoutSeed()));
}

}  // namespace gmlp::kernels::cpu
