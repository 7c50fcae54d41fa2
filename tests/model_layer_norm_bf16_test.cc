// model::LayerNormBf16 (and LayerNorm's use of it) against ATen's layer_norm in float64 on the
// same bf16 values: the output within bf16 rounding, the input gradient within bf16 rounding,
// the weight and bias gradients to float accuracy, independent of the thread count. Its fused
// forms (GELU before it, a residual add before it) against the compositions they replace.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <tuple>

#include "model/autocast.h"
#include "model/layer_norm_bf16.h"
#include "model/layers.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

struct Grads {
  torch::Tensor y, dx, dw, db;
};

// fused: LayerNormBf16 on x0 as `fused_in` (bf16 or float32); else ATen in float64.
Grads Normalize(bool fused, const torch::Tensor& x0, const torch::Tensor& w0,
                const torch::Tensor& b0, const torch::Tensor& dy,
                torch::Dtype fused_in = torch::kBFloat16) {
  const auto dtype = fused ? fused_in : torch::kDouble;
  const torch::Tensor x = x0.to(dtype).clone().requires_grad_();  // fresh leaves
  const torch::Tensor w = w0.to(fused ? torch::kFloat : torch::kDouble).clone().requires_grad_();
  const torch::Tensor b = b0.to(fused ? torch::kFloat : torch::kDouble).clone().requires_grad_();
  const torch::Tensor y = fused ? LayerNormBf16(x, w, b, 1e-5)
                                : torch::layer_norm(x, {x.size(1)}, w, b, 1e-5);
  (y.to(torch::kDouble) * dy.to(torch::kDouble)).sum().backward();
  return {y.detach().to(torch::kDouble), x.grad().to(torch::kDouble), w.grad().to(torch::kDouble),
          b.grad().to(torch::kDouble)};
}

// |a - b| <= rel |b| + abs, elementwise.
bool Near(const torch::Tensor& a, const torch::Tensor& b, double rel, double abs) {
  return ((a - b).abs() <= b.abs() * rel + abs).all().item<bool>();
}

TEST(LayerNormBf16Test, MatchesFloat64OnTheSameValues) {
  torch::manual_seed(5);
  for (const int64_t d : {1, 5, 16, 100, 384}) {  // below, at and off the lane width
    SCOPED_TRACE(d);
    const int64_t N = 300;  // several 64-row blocks and a partial one
    // The bf16 values themselves are the input of both (rounded once, before).
    const torch::Tensor x = (torch::randn({N, d}) * 2 + 0.5).to(torch::kBFloat16);
    const torch::Tensor w = torch::randn({d}) * 0.5 + 1, b = torch::randn({d}) * 0.1;
    const torch::Tensor dy = torch::randn({N, d}).to(torch::kBFloat16);
    const Grads f = Normalize(true, x, w, b, dy);
    const Grads r = Normalize(false, x, w, b, dy);
    const double bf16_ulp = 1.0 / 128;  // relative spacing of bf16
    EXPECT_TRUE(Near(f.y, r.y, bf16_ulp, 1e-3)) << (f.y - r.y).abs().max();
    if (d > 1) {  // d = 1 normalizes everything to the bias: dx is 0 up to rounding
      EXPECT_TRUE(Near(f.dx, r.dx, bf16_ulp, 1e-2 * r.dx.abs().max().item<double>()))
          << (f.dx - r.dx).abs().max();
    }
    EXPECT_TRUE(Near(f.dw, r.dw, 1e-4, 1e-3)) << (f.dw - r.dw).abs().max();
    EXPECT_TRUE(Near(f.db, r.db, 1e-4, 1e-3)) << (f.db - r.db).abs().max();
  }
}

// A float32 input (a pre-LN block's residual stream): the output is still bf16, the input
// gradient float32, to float accuracy against float64 on the same values.
TEST(LayerNormBf16Test, Float32InputGivesBf16OutputAndFloat32Gradient) {
  torch::manual_seed(7);
  for (const int64_t d : {5, 128, 300}) {
    SCOPED_TRACE(d);
    const int64_t N = 200;
    const torch::Tensor x = torch::randn({N, d}) * 3 - 1;  // float32 values, not bf16-rounded
    const torch::Tensor w = torch::randn({d}) * 0.5 + 1, b = torch::randn({d}) * 0.1;
    const torch::Tensor dy = torch::randn({N, d}).to(torch::kBFloat16);
    const torch::Tensor xf = x.clone().requires_grad_();
    const torch::Tensor y = LayerNormBf16(xf, w, b, 1e-5);
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    (y.to(torch::kDouble) * dy.to(torch::kDouble)).sum().backward();
    EXPECT_EQ(xf.grad().scalar_type(), torch::kFloat32);
    const Grads r = Normalize(false, x, w, b, dy);
    const double bf16_ulp = 1.0 / 128;
    EXPECT_TRUE(Near(y.to(torch::kDouble), r.y, bf16_ulp, 1e-3));
    // Only float rounding now: no bf16 rounding of dx or of x.
    EXPECT_TRUE(
        Near(xf.grad().to(torch::kDouble), r.dx, 1e-4, 1e-5 * r.dx.abs().max().item<double>()))
        << (xf.grad().to(torch::kDouble) - r.dx).abs().max();
  }
}

TEST(LayerNormBf16Test, SameBitsForAnyThreadCount) {
  torch::manual_seed(6);
  const torch::Tensor x = torch::randn({517, 96}).to(torch::kBFloat16);
  const torch::Tensor w = torch::rand({96}) + 0.5, b = torch::randn({96});
  const torch::Tensor dy = torch::randn({517, 96}).to(torch::kBFloat16);
  const auto [one, many] =
      testing::AtOneAndManyThreads([&] { return Normalize(true, x, w, b, dy); });
  EXPECT_TRUE(one.y.equal(many.y));
  EXPECT_TRUE(one.dx.equal(many.dx));
  EXPECT_TRUE(one.dw.equal(many.dw));
  EXPECT_TRUE(one.db.equal(many.db));
}

// LayerNorm(GELU(y + gelu_bias)) in one pass against the float64 composition on the same bf16
// values: the output within bf16 rounding, y's gradient within bf16 rounding, the three float32
// parameters' gradients to float accuracy. A kernel that skipped GELU, or GELU' in backward,
// would be off by O(1).
struct GeluNormGrads {
  torch::Tensor out, dy, dgelu_bias, dw, db;
};

GeluNormGrads GeluNormalize(bool fused, const torch::Tensor& y0, const torch::Tensor& gb0,
                            const torch::Tensor& w0, const torch::Tensor& b0,
                            const torch::Tensor& dout) {
  const auto act = fused ? torch::kBFloat16 : torch::kDouble;
  const auto par = fused ? torch::kFloat : torch::kDouble;
  const torch::Tensor y = y0.to(act).clone().requires_grad_();
  const torch::Tensor gb = gb0.to(par).clone().requires_grad_();
  const torch::Tensor w = w0.to(par).clone().requires_grad_();
  const torch::Tensor b = b0.to(par).clone().requires_grad_();
  const torch::Tensor out = fused ? BiasGeluLayerNormBf16(y, gb, w, b, 1e-5)
                                  : torch::layer_norm(torch::gelu(y + gb), {y.size(1)}, w, b, 1e-5);
  (out.to(torch::kDouble) * dout.to(torch::kDouble)).sum().backward();
  const auto f64 = [](const torch::Tensor& t) { return t.detach().to(torch::kDouble); };
  return {f64(out), f64(y.grad()), f64(gb.grad()), f64(w.grad()), f64(b.grad())};
}

TEST(LayerNormBf16Test, BiasGeluLayerNormMatchesFloat64Composition) {
  torch::manual_seed(8);
  for (const int64_t d : {5, 16, 100, 384}) {  // below, at and off the lane width; gMLP's g
    SCOPED_TRACE(d);
    const int64_t N = 300;  // several 64-row blocks and a partial one
    const torch::Tensor y = (torch::randn({N, d}) * 2).to(torch::kBFloat16);
    const torch::Tensor gb = torch::randn({d}) * 0.5;
    const torch::Tensor w = torch::randn({d}) * 0.5 + 1, b = torch::randn({d}) * 0.1;
    const torch::Tensor dout = torch::randn({N, d}).to(torch::kBFloat16);
    const GeluNormGrads f = GeluNormalize(true, y, gb, w, b, dout);
    const GeluNormGrads r = GeluNormalize(false, y, gb, w, b, dout);
    const double bf16_ulp = 1.0 / 128;
    EXPECT_TRUE(Near(f.out, r.out, bf16_ulp, 1e-3)) << (f.out - r.out).abs().max();
    EXPECT_TRUE(Near(f.dy, r.dy, bf16_ulp, 1e-2 * r.dy.abs().max().item<double>()))
        << (f.dy - r.dy).abs().max();
    const auto near_sum = [](const torch::Tensor& a, const torch::Tensor& e) {
      return Near(a, e, 1e-4, 1e-4 * e.abs().max().item<double>() + 1e-5);
    };
    EXPECT_TRUE(near_sum(f.dgelu_bias, r.dgelu_bias)) << (f.dgelu_bias - r.dgelu_bias).abs().max();
    EXPECT_TRUE(near_sum(f.dw, r.dw)) << (f.dw - r.dw).abs().max();
    EXPECT_TRUE(near_sum(f.db, r.db)) << (f.db - r.db).abs().max();
  }
}

TEST(LayerNormBf16Test, BiasGeluLayerNormSameBitsForAnyThreadCount) {
  torch::manual_seed(9);
  const torch::Tensor y = torch::randn({517, 96}).to(torch::kBFloat16);
  const torch::Tensor gb = torch::randn({96}), w = torch::rand({96}) + 0.5, b = torch::randn({96});
  const torch::Tensor dout = torch::randn({517, 96}).to(torch::kBFloat16);
  const auto [one, many] =
      testing::AtOneAndManyThreads([&] { return GeluNormalize(true, y, gb, w, b, dout); });
  EXPECT_TRUE(one.out.equal(many.out));
  EXPECT_TRUE(one.dy.equal(many.dy));
  EXPECT_TRUE(one.dgelu_bias.equal(many.dgelu_bias));
  EXPECT_TRUE(one.dw.equal(many.dw));
  EXPECT_TRUE(one.db.equal(many.db));
}

// LinearGeluNorm takes the fused kernel under CPU bf16 autocast and agrees with the composition
// norm(LinearGelu(...)) in float32, in its output and in the linear's and the norm's gradients.
TEST(LayerNormBf16Test, LinearGeluNormUnderAutocastMatchesTheComposition) {
  torch::manual_seed(10);
  torch::nn::Linear linear = MakeLinear(16, 48, 0.3);
  LayerNorm norm(48, 1e-5);
  {
    torch::NoGradGuard no_grad;
    linear->bias.normal_(0.0, 0.5);
    norm->weight.uniform_(0.5, 1.5);
    norm->bias.normal_(0.0, 0.1);
  }
  const torch::Tensor x = torch::randn({70, 16});
  const torch::Tensor dout = torch::randn({70, 48});
  const auto run = [&](bool bf16) {
    for (auto& p : linear->parameters()) p.mutable_grad() = torch::Tensor();
    for (auto& p : norm->parameters()) p.mutable_grad() = torch::Tensor();
    torch::Tensor out;
    {
      AutocastScope autocast(bf16);
      out = LinearGeluNorm(linear, x, norm);
    }
    EXPECT_EQ(out.scalar_type(), bf16 ? torch::kBFloat16 : torch::kFloat);
    (out.to(torch::kFloat) * dout).sum().backward();
    return std::vector<torch::Tensor>{out.detach().to(torch::kFloat), linear->weight.grad(),
                                      linear->bias.grad(), norm->weight.grad(), norm->bias.grad()};
  };
  const auto fused = run(true), ref = run(false);
  for (size_t k = 0; k < ref.size(); ++k) {
    SCOPED_TRACE(k);
    // bf16 inputs and matmuls: a few bf16 roundings of error, against the tensor's scale.
    const double scale = ref[k].abs().max().item<double>();
    EXPECT_LT((fused[k] - ref[k]).abs().max().item<double>(), 0.03 * scale);
  }
}

// The LayerNorm module: bf16 in, bf16 out on the CPU (3-D inputs too); fp32 in, fp32 out, but
// bf16 out under bf16 autocast when it only feeds matmuls.
TEST(LayerNormBf16Test, LayerNormModuleUsesItForBf16) {
  LayerNorm norm(8, 1e-5);
  const torch::Tensor x = torch::randn({3, 4, 8});
  const torch::Tensor yb = norm(x.to(torch::kBFloat16));
  EXPECT_EQ(yb.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(yb.sizes(), x.sizes());
  const torch::Tensor yf = norm(x.to(torch::kBFloat16).to(torch::kFloat));
  EXPECT_EQ(yf.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::allclose(yb.to(torch::kFloat), yf, 1.0 / 64, 1e-2));

  LayerNorm pre_matmul(8, 1e-5, /*feeds_matmuls=*/true);
  EXPECT_EQ(pre_matmul(x).scalar_type(), torch::kFloat);  // autocast off
  {
    AutocastScope autocast(true);
    const torch::Tensor y = pre_matmul(x);
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    EXPECT_EQ(y.sizes(), x.sizes());
    // Its weight and bias are still ones and zeros: the plain normalization.
    const torch::Tensor ref = torch::layer_norm(x.to(torch::kDouble), {8}, {}, {}, 1e-5);
    EXPECT_TRUE(torch::allclose(y.to(torch::kDouble), ref, 1.0 / 128, 1e-3));
    EXPECT_EQ(norm(x).scalar_type(), torch::kFloat);  // feeds_matmuls not set
  }
}

// AddLayerNormBf16 against what it replaces: ATen's x + delta (float32) and LayerNormBf16 of the
// sum, with autograd summing the sum's two gradients and casting delta's. The sum is the same
// bits (one float add of the same values); the rest within one rounding of the result's type.
struct AddNormGrads {
  torch::Tensor sum, y, dx, ddelta, dw, db;
};

AddNormGrads AddNormalize(bool fused, const torch::Tensor& x0, const torch::Tensor& delta0,
                          const torch::Tensor& w0, const torch::Tensor& b0,
                          const torch::Tensor& dsum, const torch::Tensor& dy) {
  const torch::Tensor x = x0.clone().requires_grad_(), delta = delta0.clone().requires_grad_();
  const torch::Tensor w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
  torch::Tensor sum, y;
  if (fused) {
    std::tie(sum, y) = AddLayerNormBf16(x, delta, w, b, 1e-5);
  } else {
    sum = x + delta;
    y = LayerNormBf16(sum, w, b, 1e-5);
  }
  EXPECT_EQ(sum.scalar_type(), torch::kFloat32);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  torch::Tensor loss = (y.to(torch::kDouble) * dy.to(torch::kDouble)).sum();
  if (dsum.defined()) loss = loss + (sum.to(torch::kDouble) * dsum).sum();  // else y alone
  loss.backward();
  EXPECT_EQ(delta.grad().scalar_type(), torch::kBFloat16);
  const auto f64 = [](const torch::Tensor& t) { return t.detach().to(torch::kDouble); };
  return {f64(sum), f64(y), f64(x.grad()), f64(delta.grad()), f64(w.grad()), f64(b.grad())};
}

TEST(LayerNormBf16Test, AddLayerNormMatchesTheAddThenTheLayerNorm) {
  torch::manual_seed(11);
  for (const int64_t d : {5, 16, 128, 384}) {  // below, at and off the lane width; d_model
    for (const bool sum_read_elsewhere : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "d " << d << " sum read " << sum_read_elsewhere);
      const int64_t N = 300;  // several 64-row blocks and a partial one
      const torch::Tensor x = torch::randn({N, d}) * 3 - 1;  // the float32 residual stream
      const torch::Tensor delta = (torch::randn({N, d}) * 0.5).to(torch::kBFloat16);
      const torch::Tensor w = torch::randn({d}) * 0.5 + 1, b = torch::randn({d}) * 0.1;
      const torch::Tensor dsum =
          sum_read_elsewhere ? torch::randn({N, d}, torch::kDouble) : torch::Tensor();
      const torch::Tensor dy = torch::randn({N, d}).to(torch::kBFloat16);
      const AddNormGrads f = AddNormalize(true, x, delta, w, b, dsum, dy);
      const AddNormGrads r = AddNormalize(false, x, delta, w, b, dsum, dy);
      EXPECT_TRUE(f.sum.equal(r.sum));
      const double bf16_ulp = 1.0 / 128;
      EXPECT_TRUE(Near(f.y, r.y, bf16_ulp, 1e-6)) << (f.y - r.y).abs().max();
      const double dx_scale = r.dx.abs().max().item<double>();
      EXPECT_TRUE(Near(f.dx, r.dx, 1e-5, 1e-6 * dx_scale)) << (f.dx - r.dx).abs().max();
      EXPECT_TRUE(Near(f.ddelta, r.ddelta, bf16_ulp, 1e-6 * dx_scale))
          << (f.ddelta - r.ddelta).abs().max();
      EXPECT_TRUE(Near(f.dw, r.dw, 1e-5, 1e-5)) << (f.dw - r.dw).abs().max();
      EXPECT_TRUE(Near(f.db, r.db, 1e-5, 1e-5)) << (f.db - r.db).abs().max();
    }
  }
}

TEST(LayerNormBf16Test, AddLayerNormSameBitsForAnyThreadCount) {
  torch::manual_seed(12);
  const torch::Tensor x = torch::randn({517, 96}) * 2;
  const torch::Tensor delta = torch::randn({517, 96}).to(torch::kBFloat16);
  const torch::Tensor w = torch::rand({96}) + 0.5, b = torch::randn({96});
  const torch::Tensor dsum = torch::randn({517, 96}, torch::kDouble);
  const torch::Tensor dy = torch::randn({517, 96}).to(torch::kBFloat16);
  const auto [one, many] =
      testing::AtOneAndManyThreads([&] { return AddNormalize(true, x, delta, w, b, dsum, dy); });
  EXPECT_TRUE(one.sum.equal(many.sum));
  EXPECT_TRUE(one.y.equal(many.y));
  EXPECT_TRUE(one.dx.equal(many.dx));
  EXPECT_TRUE(one.ddelta.equal(many.ddelta));
  EXPECT_TRUE(one.dw.equal(many.dw));
  EXPECT_TRUE(one.db.equal(many.db));
}

// LayerNorm::AddAndNormalize takes the kernel only where forward would write bf16 from a float32
// sum (a norm that feeds matmuls, under bf16 autocast, a bf16 delta), and returns the plain add
// and forward everywhere else.
TEST(LayerNormBf16Test, AddAndNormalizeTakesTheKernelWhereItApplies) {
  torch::manual_seed(13);
  LayerNorm pre_matmul(8, 1e-5, /*feeds_matmuls=*/true), plain(8, 1e-5);
  const torch::Tensor x = torch::randn({12, 8});  // the blocks' (N, d) rows
  const torch::Tensor delta = torch::randn({12, 8}).to(torch::kBFloat16);
  const auto from_kernel = [](const torch::Tensor& sum) {
    return sum.grad_fn() != nullptr &&
           sum.grad_fn()->name().find("AddLayerNormBf16") != std::string::npos;
  };
  const torch::Tensor xg = x.clone().requires_grad_();
  {
    AutocastScope autocast(true);
    const auto [sum, y] = pre_matmul->AddAndNormalize({xg, delta});
    EXPECT_TRUE(from_kernel(sum)) << sum.grad_fn()->name();
    EXPECT_EQ(sum.sizes(), x.sizes());
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(sum.equal(xg + delta));
    const torch::Tensor ref = torch::layer_norm((x + delta).to(torch::kDouble), {8}, {}, {}, 1e-5);
    EXPECT_TRUE(torch::allclose(y.to(torch::kDouble), ref, 1.0 / 128, 1e-3));

    EXPECT_FALSE(from_kernel(plain->AddAndNormalize({xg, delta}).first));  // writes float32
    const auto [same_x, y_only] = pre_matmul->AddAndNormalize({xg, {}});   // nothing to add
    EXPECT_TRUE(same_x.is_same(xg));
    EXPECT_TRUE(y_only.equal(pre_matmul(xg)));
    // Other shapes go through the same kernel on their (N, d) rows.
    const auto [sum3, y3] =
        pre_matmul->AddAndNormalize({xg.view({3, 4, 8}), delta.view({3, 4, 8})});
    EXPECT_TRUE(sum3.equal(sum.view({3, 4, 8})));
    EXPECT_TRUE(y3.equal(y.view({3, 4, 8})));
  }
  EXPECT_FALSE(from_kernel(pre_matmul->AddAndNormalize({xg, delta}).first));  // autocast off
}

}  // namespace
}  // namespace gmlp::model
