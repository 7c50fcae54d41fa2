// The optimizer's multi-tensor CPU kernels (multi_tensor_cpu.h) and the ops over them
// (kernels::AdamW, kernels::ClipByGlobalNorm) against ATen's per-tensor composition.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/multi_tensor_cpu.h"
#include "kernels/ops.h"

namespace gmlp::kernels {
namespace {

// Sizes below, at and across the kernels' 16384-element chunks, decayed (rank 2) and not.
std::vector<torch::Tensor> MixedParams() {
  return {torch::randn({1}), torch::randn({3, 7}), torch::randn({16384}), torch::randn({200, 201}),
          torch::randn({5})};
}

// kernels::AdamW: the multi-tensor kernel against ATen's per-tensor composition of the same update,
// over steps with weight decay: equal to float rounding (ATen may fuse a multiply-add the kernel
// does not).
TEST(MultiTensorCpuTest, AdamWMatchesTheAtenComposition) {
  torch::manual_seed(11);
  const std::vector<torch::Tensor> initial = MixedParams();
  std::vector<torch::Tensor> a, b;
  for (const torch::Tensor& p : initial) {
    a.push_back(p.clone());
    b.push_back(p.clone());
  }
  std::vector<torch::Tensor> moments[2][2];  // [a, b][exp_avg, exp_avg_sq]
  std::vector<double> decay;
  for (int k = 0; k < 2; ++k) {
    for (const torch::Tensor& p : initial) {
      moments[k][0].push_back(torch::zeros_like(p));
      moments[k][1].push_back(torch::zeros_like(p));
      if (k == 0) decay.push_back(p.dim() >= 2 ? 0.1 : 0.0);
    }
  }
  for (int t = 1; t <= 6; ++t) {
    std::vector<torch::Tensor> ga, gb;
    for (size_t i = 0; i < a.size(); ++i) {
      ga.push_back(torch::randn_like(a[i]) * t);
      gb.push_back(ga.back().clone());
    }
    const AdamWArgs args{1e-2, 0.9, 0.999, 1e-6, 1 - std::pow(0.9, t), 1 - std::pow(0.999, t)};
    AdamW(a, ga, moments[0][0], moments[0][1], decay, args);  // the kernel
    PolicyScope aten(Policy::kAten);
    AdamW(b, gb, moments[1][0], moments[1][1], decay, args);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-6, 1e-7)) << (a[i] - b[i]).abs().max();
    // They moved (up to lr per step), so the comparison is not between untouched copies.
    EXPECT_GT((a[i] - initial[i]).abs().max().item<float>(), 1e-2f);
  }
}

// Chunks are fixed, so the update and the norm are the same bits for any thread count.
TEST(MultiTensorCpuTest, SameBitsForAnyThreadCount) {
  const int threads = torch::get_num_threads();
  std::vector<torch::Tensor> result[2];
  double norm[2];
  for (int k = 0; k < 2; ++k) {
    torch::set_num_threads(k == 0 ? 1 : std::max(2, threads));
    torch::manual_seed(12);
    std::vector<torch::Tensor> p = MixedParams(), g, m, v;
    for (const torch::Tensor& x : p) {
      g.push_back(torch::randn_like(x));
      m.push_back(torch::randn_like(x) * 0.1);
      v.push_back(torch::rand_like(x) * 0.1);
    }
    cpu::AdamWStepCpu(p, g, m, v, {0.0, 0.1, 0.1, 0.1, 0.0}, {1e-3, 0.9, 0.999, 1e-6, 0.1, 0.001});
    norm[k] = cpu::GlobalNormCpu(g);
    result[k] = p;
  }
  torch::set_num_threads(threads);
  EXPECT_EQ(norm[0], norm[1]);
  for (size_t i = 0; i < result[0].size(); ++i) EXPECT_TRUE(result[0][i].equal(result[1][i]));
}

TEST(MultiTensorCpuTest, GlobalNormIsTheFloat64Norm) {
  torch::manual_seed(13);
  const std::vector<torch::Tensor> t = MixedParams();
  double sq = 0;
  for (const torch::Tensor& x : t) sq += x.to(torch::kFloat64).pow(2).sum().item<double>();
  EXPECT_NEAR(cpu::GlobalNormCpu(t), std::sqrt(sq), 1e-12 * std::sqrt(sq));
  std::vector<torch::Tensor> bad = MixedParams();
  bad[2][100] = INFINITY;
  EXPECT_TRUE(std::isinf(cpu::GlobalNormCpu(bad)));
  bad[4][0] = NAN;
  EXPECT_TRUE(std::isnan(cpu::GlobalNormCpu(bad)));
}

// kernels::ClipByGlobalNorm: clipping through the kernels reports the same norm as ATen's
// per-tensor norms and scales the gradients the same way, both when it clips and when it does not.
TEST(MultiTensorCpuTest, ClippingMatchesTheAtenPath) {
  for (const double max_norm : {1.0, 1e6}) {
    SCOPED_TRACE(max_norm);
    torch::manual_seed(14);
    std::vector<torch::Tensor> a, b;
    for (const torch::Tensor& p : MixedParams()) {
      a.push_back(torch::randn_like(p));
      b.push_back(a.back().clone());
    }
    const double na = ClipByGlobalNorm(a, max_norm).item<double>();
    double nb;
    {
      PolicyScope aten(Policy::kAten);
      nb = ClipByGlobalNorm(b, max_norm).item<double>();
    }
    EXPECT_NEAR(na, nb, 1e-6 * nb);
    EXPECT_GT(na, 1.0);  // so max_norm = 1 clips
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-6, 0)) << i;
    }
  }
}

}  // namespace
}  // namespace gmlp::kernels
