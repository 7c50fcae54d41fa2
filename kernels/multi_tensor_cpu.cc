// Multi-tensor AdamW and clipping on the CPU (see multi_tensor_cpu.h).
#include "kernels/multi_tensor_cpu.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu_kernel_util.h"

namespace gmlp::kernels::cpu {
namespace {

// Elements per work item: four float streams of it fit in L2, and it is large enough that the
// per-item overhead vanishes. Fixed, so partial sums are formed and added in the same order for
// any thread count.
constexpr int64_t kChunk = 1 << 14;

struct Chunk {
  int64_t tensor, begin, end;
};

std::vector<Chunk> Chunks(const std::vector<torch::Tensor>& tensors) {
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t n = tensors[i].numel();
    for (int64_t b = 0; b < n; b += kChunk) {
      chunks.push_back({static_cast<int64_t>(i), b, std::min(n, b + kChunk)});
    }
  }
  return chunks;
}

// The ATen composition this replaces, op by op, each rounded to float as ATen's float kernels
// round (scalars are converted to float first, as ATen converts them):
//   m.mul_(b1).add_(g, 1 - b1);  v.mul_(b2).addcmul_(g, g, 1 - b2);  p.mul_(1 - lr wd);
//   denom = (v.sqrt() / sqrt(bc2)).add_(eps);  p.addcdiv_(m, denom, -lr / bc1)
// (ATen may fuse a multiply-add where this does not, so the two agree to float rounding.)
struct AdamWScalars {
  float b1, one_minus_b1, b2, one_minus_b2, decay, sqrt_bc2, eps, step;
};

GMLP_VECTOR_CLONES
void AdamWRange(float* p, const float* g, float* m, float* v, int64_t n, AdamWScalars s) {
  for (int64_t j = 0; j < n; ++j) {
    const float gj = g[j];
    const float mj = m[j] * s.b1 + s.one_minus_b1 * gj;
    const float vj = v[j] * s.b2 + s.one_minus_b2 * gj * gj;
    const float denom = std::sqrt(vj) / s.sqrt_bc2 + s.eps;
    m[j] = mj;
    v[j] = vj;
    p[j] = p[j] * s.decay + s.step * (mj / denom);
  }
}

// Sum of squares in double, in 8 lanes combined in a fixed order (vectorizable without
// reassociation: the same bits in every clone).
GMLP_VECTOR_CLONES
double SumSquaresRange(const float* x, int64_t n) {
  constexpr int64_t kLanes = 8;
  double s[kLanes] = {};
  const int64_t full = n - n % kLanes;
  for (int64_t j = 0; j < full; j += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) {
      const double xk = x[j + k];
      s[k] += xk * xk;
    }
  }
  for (int64_t j = full; j < n; ++j) {
    const double xj = x[j];
    s[j - full] += xj * xj;
  }
  double total = 0;
  for (int64_t k = 0; k < kLanes; ++k) total += s[k];
  return total;
}

GMLP_VECTOR_CLONES
void ScaleRange(float* x, int64_t n, float scale) {
  for (int64_t j = 0; j < n; ++j) x[j] *= scale;
}

float* Data(const torch::Tensor& t) { return t.data_ptr<float>(); }

}  // namespace

bool AllContiguousFloatCpu(const std::vector<torch::Tensor>& tensors) {
  return std::all_of(tensors.begin(), tensors.end(), [](const torch::Tensor& t) {
    return t.defined() && t.is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous();
  });
}

void AdamWStepCpu(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                  const std::vector<torch::Tensor>& exp_avg,
                  const std::vector<torch::Tensor>& exp_avg_sq,
                  const std::vector<double>& weight_decay, const AdamWStepArgs& args) {
  const size_t k = params.size();
  TORCH_CHECK(grads.size() == k && exp_avg.size() == k && exp_avg_sq.size() == k &&
                  weight_decay.size() == k,
              "AdamWStepCpu: ", k, " parameters need as many gradients, moments and decays");
  TORCH_CHECK(AllContiguousFloatCpu(params) && AllContiguousFloatCpu(grads) &&
                  AllContiguousFloatCpu(exp_avg) && AllContiguousFloatCpu(exp_avg_sq),
              "AdamWStepCpu: every tensor must be contiguous float32 on the CPU");
  std::vector<AdamWScalars> scalars(k);
  for (size_t i = 0; i < k; ++i) {
    const int64_t n = params[i].numel();
    TORCH_CHECK(grads[i].numel() == n && exp_avg[i].numel() == n && exp_avg_sq[i].numel() == n,
                "AdamWStepCpu: parameter ", i, " and its gradient or moments differ in size");
    scalars[i] = {static_cast<float>(args.beta1),
                  static_cast<float>(1.0 - args.beta1),
                  static_cast<float>(args.beta2),
                  static_cast<float>(1.0 - args.beta2),
                  static_cast<float>(1.0 - args.lr * weight_decay[i]),
                  static_cast<float>(std::sqrt(args.bias_correction2)),
                  static_cast<float>(args.eps),
                  static_cast<float>(-args.lr / args.bias_correction1)};
  }
  const std::vector<Chunk> chunks = Chunks(params);
  at::parallel_for(0, static_cast<int64_t>(chunks.size()), 1, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      const Chunk& ch = chunks[c];
      const int64_t i = ch.tensor, b = ch.begin;
      AdamWRange(Data(params[i]) + b, Data(grads[i]) + b, Data(exp_avg[i]) + b,
                 Data(exp_avg_sq[i]) + b, ch.end - b, scalars[i]);
    }
  });
}

double GlobalNormCpu(const std::vector<torch::Tensor>& tensors) {
  TORCH_CHECK(AllContiguousFloatCpu(tensors),
              "GlobalNormCpu: every tensor must be contiguous float32 on the CPU");
  const std::vector<Chunk> chunks = Chunks(tensors);
  std::vector<double> partial(chunks.size());
  at::parallel_for(0, static_cast<int64_t>(chunks.size()), 1, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      const Chunk& ch = chunks[c];
      partial[c] = SumSquaresRange(Data(tensors[ch.tensor]) + ch.begin, ch.end - ch.begin);
    }
  });
  double total = 0;
  for (const double p : partial) total += p;
  return std::sqrt(total);
}

void ScaleCpu(const std::vector<torch::Tensor>& tensors, float scale) {
  TORCH_CHECK(AllContiguousFloatCpu(tensors),
              "ScaleCpu: every tensor must be contiguous float32 on the CPU");
  const std::vector<Chunk> chunks = Chunks(tensors);
  at::parallel_for(0, static_cast<int64_t>(chunks.size()), 1, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      const Chunk& ch = chunks[c];
      ScaleRange(Data(tensors[ch.tensor]) + ch.begin, ch.end - ch.begin, scale);
    }
  });
}

}  // namespace gmlp::kernels::cpu
