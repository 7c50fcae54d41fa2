// model::BiasGeluBf16 / BiasGeluGateBf16 against the unfused composition in float64 on the same
// bf16 values (output and input gradients within bf16 rounding, the bias gradient to float
// accuracy, the same bits at any thread count), and LinearGelu against ATen's ops under CPU bf16
// autocast and in fp32.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/autocast.h"
#include "model/gelu_bf16.h"
#include "model/layers.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

struct Result {
  torch::Tensor out, dy, db, dgate;
};

// fused: the kernel on bf16 y and gate, fp32 bias. Otherwise the float64 composition
// gelu(y + b) [* gate] of the same values, differentiated by autograd.
Result Activate(bool fused, bool gated, const torch::Tensor& y0, const torch::Tensor& b0,
                const torch::Tensor& gate0, const torch::Tensor& dout) {
  const auto act = fused ? torch::kBFloat16 : torch::kDouble;
  const torch::Tensor y = y0.to(act).clone().requires_grad_();
  const torch::Tensor b = b0.to(fused ? torch::kFloat : torch::kDouble).clone().requires_grad_();
  const torch::Tensor gate = gate0.to(act).clone().requires_grad_();
  torch::Tensor out;
  if (fused) {
    out = gated ? BiasGeluGateBf16(y, b, gate) : BiasGeluBf16(y, b);
  } else {
    out = torch::gelu(y + b);
    if (gated) out = out * gate;
  }
  (out.to(torch::kDouble) * dout.to(torch::kDouble)).sum().backward();
  Result r{out.detach().to(torch::kDouble), y.grad().to(torch::kDouble),
           b.grad().to(torch::kDouble), torch::Tensor()};
  if (gated) r.dgate = gate.grad().to(torch::kDouble);
  return r;
}

// |a - b| <= rel |b| + abs, elementwise.
bool Near(const torch::Tensor& a, const torch::Tensor& b, double rel, double abs) {
  return ((a - b).abs() <= b.abs() * rel + abs).all().item<bool>();
}

// Pre-activations across GELU's whole range, the tails and zero included.
torch::Tensor Inputs(int64_t N, int64_t F) {
  torch::Tensor y = torch::randn({N, F}) * 3;
  const std::vector<float> edges = {-13, -10, -6, -4, -2.5, -1, -0.25, 0, 0.25, 1, 2.5, 4, 10, 13};
  const int64_t k = std::min<int64_t>(F, static_cast<int64_t>(edges.size()));
  y[0].narrow(0, 0, k).copy_(torch::tensor(edges).narrow(0, 0, k));
  return y.to(torch::kBFloat16);
}

TEST(GeluBf16Test, MatchesFloat64CompositionOnTheSameValues) {
  torch::manual_seed(11);
  const double bf16_ulp = 1.0 / 128;  // relative spacing of bf16
  for (const bool gated : {false, true}) {
    for (const int64_t F : {1, 7, 16, 100, 384}) {  // below, at and off the vector widths
      SCOPED_TRACE(::testing::Message() << "gated " << gated << " F " << F);
      const int64_t N = 300;  // several 64-row blocks and a partial one
      const torch::Tensor y = Inputs(N, F);
      const torch::Tensor b = torch::randn({F}) * 0.1;
      const torch::Tensor gate = (torch::randn({N, F}) + 1).to(torch::kBFloat16);
      const torch::Tensor dout = torch::randn({N, F}).to(torch::kBFloat16);
      const Result f = Activate(true, gated, y, b, gate, dout);
      const Result r = Activate(false, gated, y, b, gate, dout);
      // The float result is within ~1e-6 of GELU; the bf16 output adds one rounding.
      EXPECT_TRUE(Near(f.out, r.out, bf16_ulp, 1e-6)) << (f.out - r.out).abs().max();
      EXPECT_TRUE(Near(f.dy, r.dy, bf16_ulp, 1e-6)) << (f.dy - r.dy).abs().max();
      if (gated) {
        EXPECT_TRUE(Near(f.dgate, r.dgate, bf16_ulp, 1e-6)) << (f.dgate - r.dgate).abs().max();
      }
      // Summed in float from unrounded terms: float accuracy relative to the terms' magnitude.
      const torch::Tensor scale = r.dy.abs().sum(0);
      EXPECT_TRUE(((f.db - r.db).abs() <= scale * 1e-5 + 1e-6).all().item<bool>())
          << (f.db - r.db).abs().max();
    }
  }
}

TEST(GeluBf16Test, SameBitsForAnyThreadCount) {
  torch::manual_seed(12);
  const torch::Tensor y = Inputs(517, 96);
  const torch::Tensor b = torch::randn({96});
  const torch::Tensor gate = torch::randn({517, 96}).to(torch::kBFloat16);
  const torch::Tensor dout = torch::randn({517, 96}).to(torch::kBFloat16);
  const auto [one, many] =
      testing::AtOneAndManyThreads([&] { return Activate(true, true, y, b, gate, dout); });
  EXPECT_TRUE(one.out.equal(many.out));
  EXPECT_TRUE(one.dy.equal(many.dy));
  EXPECT_TRUE(one.db.equal(many.db));
  EXPECT_TRUE(one.dgate.equal(many.dgate));
}

TEST(GeluBf16Test, NanPropagates) {
  const torch::Tensor y = torch::tensor({std::nanf(""), 1.0f}).view({1, 2}).to(torch::kBFloat16);
  const torch::Tensor out = BiasGeluBf16(y, torch::zeros({2})).to(torch::kFloat);
  EXPECT_TRUE(std::isnan(out[0][0].item<float>()));
  EXPECT_NEAR(out[0][1].item<float>(), 0.8413, 4e-3);
}

// LinearGelu (3-D input, as the heads pass it) under CPU bf16 autocast, against ATen's unfused
// ops under the same autocast: output and the gradients of x, weight, bias and gate.
TEST(GeluBf16Test, LinearGeluMatchesAtenUnderAutocast) {
  torch::manual_seed(13);
  torch::nn::Linear linear = MakeLinear(24, 40, 0.3);
  {
    torch::NoGradGuard no_grad;
    linear->bias.normal_(0.0, 0.5);
  }
  const torch::Tensor x0 = torch::randn({3, 5, 24});
  const torch::Tensor gate0 = torch::randn({3, 5, 40});
  const torch::Tensor dout = torch::randn({3, 5, 40});
  for (const bool gated : {false, true}) {
    SCOPED_TRACE(gated);
    std::vector<torch::Tensor> grads[2];
    torch::Tensor outs[2];
    for (const bool fused : {false, true}) {
      linear->zero_grad();
      const torch::Tensor x = x0.clone().requires_grad_();
      const torch::Tensor gate = gate0.clone().requires_grad_();
      torch::Tensor out;
      {
        AutocastScope autocast(true);
        ASSERT_TRUE(CpuAutocastsToBf16());
        const torch::Tensor g = gated ? gate.to(torch::kBFloat16) : torch::Tensor();
        if (fused) {
          out = LinearGelu(linear, x, g);
        } else {
          out = torch::gelu(linear(x));
          if (gated) out = out * g;
        }
      }
      EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
      EXPECT_EQ(out.sizes(), dout.sizes());
      (out.to(torch::kFloat) * dout).sum().backward();
      outs[fused] = out.detach().to(torch::kFloat);
      grads[fused] = {x.grad(), linear->weight.grad(), linear->bias.grad()};
      if (gated) grads[fused].push_back(gate.grad());
    }
    EXPECT_FALSE(CpuAutocastsToBf16());
    // Both are bf16 computations of the same function; ATen's rounds the bias to bf16 and
    // rounds more intermediates, so the tolerance is a few bf16 ulps.
    EXPECT_TRUE(torch::allclose(outs[1], outs[0], 0.03, 0.02));
    for (size_t k = 0; k < grads[0].size(); ++k) {
      SCOPED_TRACE(k);
      const double scale = grads[0][k].abs().max().item<double>();
      EXPECT_TRUE(torch::allclose(grads[1][k], grads[0][k], 0.03, 0.02 * scale))
          << (grads[1][k] - grads[0][k]).abs().max();
    }
  }
}

// Without autocast LinearGelu is exactly ATen's gelu(linear(x)) [* gate].
TEST(GeluBf16Test, LinearGeluIsAtenInFloat32) {
  torch::manual_seed(14);
  torch::nn::Linear linear = MakeLinear(16, 32, 0.3);
  const torch::Tensor x = torch::randn({7, 16}), gate = torch::randn({7, 32});
  EXPECT_TRUE(LinearGelu(linear, x).equal(torch::gelu(linear(x))));
  EXPECT_TRUE(LinearGelu(linear, x, gate).equal(torch::gelu(linear(x)) * gate));
}

}  // namespace
}  // namespace gmlp::model
