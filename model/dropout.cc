// Counter-based inverted dropout (see dropout.h).
#include "model/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <mutex>

#include "common/mix64.h"

namespace gmlp::model {
namespace {

uint64_t NextSeed() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

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

}  // namespace

torch::Tensor ApplyDropoutMask(const torch::Tensor& x, double p, uint64_t seed) {
  TORCH_CHECK(p >= 0 && p < 1, "dropout probability must be in [0, 1), got ", p);
  const torch::Tensor in = x.contiguous();
  torch::Tensor out = torch::empty_like(in);
  const int64_t n = in.numel();
  // Kept when the top 32 bits are >= p * 2^32: P(keep) = 1 - p to within 2^-32.
  const auto threshold = static_cast<uint64_t>(std::llround(p * 4294967296.0));
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, in.scalar_type(), "gmlp_dropout", [&] {
    const scalar_t* src = in.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    const auto s = static_cast<scalar_t>(scale);
    at::parallel_for(0, n, 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const bool keep = (SplitMix64At(seed, static_cast<uint64_t>(i)) >> 32) >= threshold;
        dst[i] = keep ? static_cast<scalar_t>(src[i] * s) : static_cast<scalar_t>(0);
      }
    });
  });
  return out;
}

torch::Tensor Dropout(const torch::Tensor& x, double p, bool train) {
  if (!train || p == 0.0) return x;
  if (!x.device().is_cpu()) return torch::dropout(x, p, train);
  return DropoutFunction::apply(x, p, static_cast<int64_t>(NextSeed()));
}

}  // namespace gmlp::model
