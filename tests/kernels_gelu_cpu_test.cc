// kernels::cpu::BiasGelu / BiasGeluGate against the unfused composition in float64 on the same
// values, bf16 and float32 (output and input gradients within one rounding of the activations'
// type, the bias gradient to float accuracy, the same bits at any thread count), and LinearGelu
// against ATen's ops under CPU bf16 autocast and in float32.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/autocast.h"
#include "kernels/gelu_cpu.h"
#include "kernels/ops.h"
#include "tests/kernels_test_util.h"

namespace gmlp::kernels::cpu {
namespace {

struct Result {
  torch::Tensor out, dy, db, dgate;
};

// With `kernel` (the activations' dtype, bf16 or float32) the kernel on y, gate and dout of that
// dtype and a float32 bias; with kDouble the float64 composition gelu(y + b) [* gate] of the same
// values, differentiated by autograd. An undefined b0 means no bias.
Result Activate(torch::Dtype act, bool gated, const torch::Tensor& y0, const torch::Tensor& b0,
                const torch::Tensor& gate0, const torch::Tensor& dout) {
  const bool fused = act != torch::kDouble;
  const torch::Tensor y = y0.to(act).clone().requires_grad_();
  const torch::Tensor b =
      b0.defined() ? b0.to(fused ? torch::kFloat : torch::kDouble).clone().requires_grad_()
                   : torch::Tensor();
  const torch::Tensor gate = gate0.to(act).clone().requires_grad_();
  torch::Tensor out;
  if (fused) {
    out = gated ? BiasGeluGate(y, b, gate) : BiasGelu(y, b);
    EXPECT_EQ(out.scalar_type(), act);
  } else {
    out = torch::gelu(b.defined() ? y + b : y);
    if (gated) out = out * gate;
  }
  (out.to(torch::kDouble) * dout.to(act).to(torch::kDouble)).sum().backward();
  Result r{out.detach().to(torch::kDouble), y.grad().to(torch::kDouble),
           b.defined() ? b.grad().to(torch::kDouble) : torch::Tensor(), torch::Tensor()};
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

// The activations' dtype, its relative rounding step and the absolute error allowed on top of it
// (erf's approximation, ~1e-7 relative to GELU's scale, and float32 arithmetic on the way).
struct Precision {
  torch::Dtype dtype;
  double ulp, abs;
};
constexpr Precision kBf16{torch::kBFloat16, 1.0 / 128, 1e-6};
constexpr Precision kFloat32{torch::kFloat, 1.2e-7 * 4, 2e-6};

TEST(GeluCpuTest, MatchesFloat64CompositionOnTheSameValues) {
  torch::manual_seed(11);
  for (const Precision p : {kBf16, kFloat32}) {
    for (const bool with_bias : {true, false}) {
      for (const bool gated : {false, true}) {
        for (const int64_t F : {1, 7, 16, 100, 384}) {  // below, at and off the vector widths
          SCOPED_TRACE(::testing::Message()
                       << p.dtype << " bias " << with_bias << " gated " << gated << " F " << F);
          const int64_t N = 300;  // several 64-row blocks and a partial one
          // Rounded to bf16 first, so that both dtypes see values bf16 can hold (the edges).
          const torch::Tensor y = Inputs(N, F).to(p.dtype);
          const torch::Tensor b = with_bias ? torch::randn({F}) * 0.1 : torch::Tensor();
          const torch::Tensor gate = (torch::randn({N, F}) + 1).to(p.dtype);
          const torch::Tensor dout = torch::randn({N, F}).to(p.dtype);
          const Result f = Activate(p.dtype, gated, y, b, gate, dout);
          const Result r = Activate(torch::kDouble, gated, y, b, gate, dout);
          // The float result is within ~1e-6 of GELU; the output adds one rounding.
          EXPECT_TRUE(Near(f.out, r.out, p.ulp, p.abs)) << (f.out - r.out).abs().max();
          EXPECT_TRUE(Near(f.dy, r.dy, p.ulp, p.abs)) << (f.dy - r.dy).abs().max();
          if (gated) {
            EXPECT_TRUE(Near(f.dgate, r.dgate, p.ulp, p.abs)) << (f.dgate - r.dgate).abs().max();
          }
          if (!with_bias) {
            EXPECT_FALSE(f.db.defined());
            continue;
          }
          // Summed in float from unrounded terms: float accuracy relative to the terms' size.
          const torch::Tensor scale = r.dy.abs().sum(0);
          EXPECT_TRUE(((f.db - r.db).abs() <= scale * 1e-5 + 1e-6).all().item<bool>())
              << (f.db - r.db).abs().max();
        }
      }
    }
  }
}

TEST(GeluCpuTest, SameBitsForAnyThreadCount) {
  torch::manual_seed(12);
  for (const torch::Dtype act : {torch::kBFloat16, torch::kFloat}) {
    SCOPED_TRACE(act);
    const torch::Tensor y = Inputs(517, 96);
    const torch::Tensor b = torch::randn({96});
    const torch::Tensor gate = torch::randn({517, 96});
    const torch::Tensor dout = torch::randn({517, 96});
    const auto [one, many] =
        testing::AtOneAndManyThreads([&] { return Activate(act, true, y, b, gate, dout); });
    EXPECT_TRUE(one.out.equal(many.out));
    EXPECT_TRUE(one.dy.equal(many.dy));
    EXPECT_TRUE(one.db.equal(many.db));
    EXPECT_TRUE(one.dgate.equal(many.dgate));
  }
}

TEST(GeluCpuTest, NanPropagates) {
  for (const torch::Dtype act : {torch::kBFloat16, torch::kFloat}) {
    const torch::Tensor y = torch::tensor({std::nanf(""), 1.0f}).view({1, 2}).to(act);
    const torch::Tensor out = BiasGelu(y, torch::zeros({2})).to(torch::kFloat);
    EXPECT_TRUE(std::isnan(out[0][0].item<float>())) << act;
    EXPECT_NEAR(out[0][1].item<float>(), 0.8413, 4e-3) << act;
  }
}

// LinearGelu (3-D input, as the heads pass it) against ATen's unfused ops, under CPU bf16
// autocast and in float32: output and the gradients of x, weight, bias and gate, and whether the
// kernel ran.
TEST(GeluCpuTest, LinearGeluMatchesAten) {
  torch::manual_seed(13);
  const torch::Tensor w = (torch::randn({40, 24}) * 0.3).requires_grad_();
  const torch::Tensor b = (torch::randn({40}) * 0.5).requires_grad_();
  const torch::Tensor x0 = torch::randn({3, 5, 24});
  const torch::Tensor gate0 = torch::randn({3, 5, 40});
  const torch::Tensor dout = torch::randn({3, 5, 40});
  for (const bool bf16 : {true, false}) {
    for (const bool gated : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "bf16 " << bf16 << " gated " << gated);
      std::vector<torch::Tensor> grads[2];
      torch::Tensor outs[2];
      for (const bool fused : {false, true}) {
        w.mutable_grad() = torch::Tensor();
        b.mutable_grad() = torch::Tensor();
        const torch::Tensor x = x0.clone().requires_grad_();
        const torch::Tensor gate = gate0.clone().requires_grad_();
        torch::Tensor out;
        {
          AutocastScope autocast(bf16);
          ASSERT_EQ(CpuAutocastsToBf16(), bf16);
          const torch::Tensor g =
              gated ? (bf16 ? gate.to(torch::kBFloat16) : gate) : torch::Tensor();
          if (fused) {
            out = kernels::LinearGelu(x, w, b, g);
            ASSERT_TRUE(out.grad_fn());
            // The kernel (behind the view back to x's shape) for bf16, and float32 with a gate;
            // where it runs it adds the bias (its second input) after a bias-free product.
            const auto& node = out.grad_fn()->next_edges()[0].function;
            const std::string name = node->name();
            const bool kernel = name.find("BiasGeluFunction") != std::string::npos;
            EXPECT_EQ(kernel, bf16 || gated) << name;
            if (kernel) EXPECT_TRUE(node->next_edges().at(1).is_valid());
          } else {
            out = torch::gelu(torch::linear(x, w, b));
            if (gated) out = out * g;
          }
        }
        EXPECT_EQ(out.scalar_type(), bf16 ? torch::kBFloat16 : torch::kFloat);
        EXPECT_EQ(out.sizes(), dout.sizes());
        (out.to(torch::kFloat) * dout).sum().backward();
        outs[fused] = out.detach().to(torch::kFloat);
        grads[fused] = {x.grad(), w.grad(), b.grad()};
        if (gated) grads[fused].push_back(gate.grad());
      }
      EXPECT_FALSE(CpuAutocastsToBf16());
      // Both compute the same function. In bf16 ATen's rounds the bias to bf16 and rounds more
      // intermediates, so the tolerance is a few bf16 ulps; in float32 a few float ulps.
      const double rel = bf16 ? 0.03 : 1e-5, abs = bf16 ? 0.02 : 1e-5;
      EXPECT_TRUE(torch::allclose(outs[1], outs[0], rel, abs)) << (outs[1] - outs[0]).abs().max();
      for (size_t k = 0; k < grads[0].size(); ++k) {
        SCOPED_TRACE(k);
        const double scale = grads[0][k].abs().max().item<double>();
        EXPECT_TRUE(torch::allclose(grads[1][k], grads[0][k], rel, abs * scale))
            << (grads[1][k] - grads[0][k]).abs().max();
      }
    }
  }
}

// Off the kernel's dtypes (float64) LinearGelu is exactly ATen's gelu(linear(x)) [* gate].
TEST(GeluCpuTest, LinearGeluIsAtenInFloat64) {
  torch::manual_seed(14);
  const torch::Tensor w = torch::randn({32, 16}, torch::kDouble) * 0.3;
  const torch::Tensor b = torch::randn({32}, torch::kDouble);
  const torch::Tensor x = torch::randn({7, 16}, torch::kDouble);
  const torch::Tensor gate = torch::randn({7, 32}, torch::kDouble);
  const torch::Tensor aten = torch::gelu(torch::linear(x, w, b));
  EXPECT_TRUE(kernels::LinearGelu(x, w, b).equal(aten));
  EXPECT_TRUE(kernels::LinearGelu(x, w, b, gate).equal(aten * gate));
}

}  // namespace
}  // namespace gmlp::kernels::cpu
