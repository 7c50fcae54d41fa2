// kernels::cpu::LayerNormBf16 (and LayerNorm's use of it) against ATen's layer_norm in float64 on
// the same bf16 values: the output within bf16 rounding, the input gradient within bf16 rounding,
// the weight and bias gradients to float accuracy, independent of the thread count. Its fused
// forms (GELU before it, a residual add before it), in bf16 and in float32, against the
// compositions they replace.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <tuple>

#include "kernels/autocast.h"
#include "kernels/layer_norm_cpu.h"
#include "kernels/ops.h"
#include "tests/kernels_test_util.h"

namespace gmlp::kernels::cpu {
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
  const torch::Tensor y =
      fused ? LayerNormBf16(x, w, b, 1e-5) : torch::layer_norm(x, {x.size(1)}, w, b, 1e-5);
  (y.to(torch::kDouble) * dy.to(torch::kDouble)).sum().backward();
  return {y.detach().to(torch::kDouble), x.grad().to(torch::kDouble), w.grad().to(torch::kDouble),
          b.grad().to(torch::kDouble)};
}

// |a - b| <= rel |b| + abs, elementwise.
bool Near(const torch::Tensor& a, const torch::Tensor& b, double rel, double abs) {
  return ((a - b).abs() <= b.abs() * rel + abs).all().item<bool>();
}

TEST(LayerNormCpuTest, MatchesFloat64OnTheSameValues) {
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
TEST(LayerNormCpuTest, Float32InputGivesBf16OutputAndFloat32Gradient) {
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

TEST(LayerNormCpuTest, SameBitsForAnyThreadCount) {
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

// LayerNorm(GELU(y + gelu_bias)) in one pass against the float64 composition on the same values
// (bf16 or float32): the output and y's gradient within one rounding of their dtype, the float32
// parameters' gradients to float accuracy. A kernel that skipped GELU, or GELU' in backward, would
// be off by O(1).
struct GeluNormGrads {
  torch::Tensor out, dy, dgelu_bias, dw, db;
};

// fused: BiasGeluLayerNorm with y in `act` (no GELU bias when gb0 is undefined); else float64.
GeluNormGrads GeluNormalize(bool fused, const torch::Tensor& y0, const torch::Tensor& gb0,
                            const torch::Tensor& w0, const torch::Tensor& b0,
                            const torch::Tensor& dout, torch::Dtype act = torch::kBFloat16) {
  const auto y_type = fused ? act : torch::kDouble;
  const auto par = fused ? torch::kFloat : torch::kDouble;
  const torch::Tensor y = y0.to(y_type).clone().requires_grad_();
  const torch::Tensor gb = gb0.defined() ? gb0.to(par).clone().requires_grad_() : torch::Tensor();
  const torch::Tensor w = w0.to(par).clone().requires_grad_();
  const torch::Tensor b = b0.to(par).clone().requires_grad_();
  const torch::Tensor out =
      fused ? BiasGeluLayerNorm(y, gb, w, b, 1e-5)
            : torch::layer_norm(torch::gelu(gb.defined() ? y + gb : y), {y.size(1)}, w, b, 1e-5);
  EXPECT_EQ(out.scalar_type(), y_type);
  (out.to(torch::kDouble) * dout.to(torch::kDouble)).sum().backward();
  const auto f64 = [](const torch::Tensor& t) {
    return t.defined() ? t.detach().to(torch::kDouble) : t;
  };
  EXPECT_EQ(y.grad().scalar_type(), y_type);
  return {f64(out), f64(y.grad()), gb.defined() ? f64(gb.grad()) : torch::Tensor(), f64(w.grad()),
          f64(b.grad())};
}

TEST(LayerNormCpuTest, BiasGeluLayerNormMatchesFloat64Composition) {
  torch::manual_seed(8);
  for (const auto act : {torch::kBFloat16, torch::kFloat32}) {
    for (const bool with_bias : {true, false}) {   // float32 runs without: the bias is in addmm
      for (const int64_t d : {5, 16, 100, 384}) {  // below, at and off the lane width; gMLP's g
        SCOPED_TRACE(::testing::Message() << act << " bias " << with_bias << " d " << d);
        const int64_t N = 300;  // several 64-row blocks and a partial one
        // The values themselves (rounded to `act` once, before) are the input of both.
        const torch::Tensor y = (torch::randn({N, d}) * 2).to(act);
        const torch::Tensor gb = with_bias ? torch::randn({d}) * 0.5 : torch::Tensor();
        const torch::Tensor w = torch::randn({d}) * 0.5 + 1, b = torch::randn({d}) * 0.1;
        const torch::Tensor dout = torch::randn({N, d}).to(act);
        const GeluNormGrads f = GeluNormalize(true, y, gb, w, b, dout, act);
        const GeluNormGrads r = GeluNormalize(false, y, gb, w, b, dout);
        // One rounding of the output's dtype; float32's bound also covers GELU's erf (1.5e-7).
        const double ulp = act == torch::kBFloat16 ? 1.0 / 128 : 1e-5;
        EXPECT_TRUE(Near(f.out, r.out, ulp, act == torch::kBFloat16 ? 1e-3 : 1e-5))
            << (f.out - r.out).abs().max();
        const double dy_scale = r.dy.abs().max().item<double>();
        EXPECT_TRUE(Near(f.dy, r.dy, ulp, (act == torch::kBFloat16 ? 1e-2 : 1e-5) * dy_scale))
            << (f.dy - r.dy).abs().max();
        const auto near_sum = [](const torch::Tensor& a, const torch::Tensor& e) {
          return Near(a, e, 1e-4, 1e-4 * e.abs().max().item<double>() + 1e-5);
        };
        if (with_bias) {
          EXPECT_TRUE(near_sum(f.dgelu_bias, r.dgelu_bias))
              << (f.dgelu_bias - r.dgelu_bias).abs().max();
        }
        EXPECT_TRUE(near_sum(f.dw, r.dw)) << (f.dw - r.dw).abs().max();
        EXPECT_TRUE(near_sum(f.db, r.db)) << (f.db - r.db).abs().max();
      }
    }
  }
}

TEST(LayerNormCpuTest, BiasGeluLayerNormSameBitsForAnyThreadCount) {
  torch::manual_seed(9);
  for (const auto act : {torch::kBFloat16, torch::kFloat32}) {
    SCOPED_TRACE(act);
    const torch::Tensor y = torch::randn({517, 96}).to(act);
    const torch::Tensor gb = torch::randn({96}), w = torch::rand({96}) + 0.5;
    const torch::Tensor b = torch::randn({96});
    const torch::Tensor dout = torch::randn({517, 96}).to(act);
    const auto [one, many] =
        testing::AtOneAndManyThreads([&] { return GeluNormalize(true, y, gb, w, b, dout, act); });
    EXPECT_TRUE(one.out.equal(many.out));
    EXPECT_TRUE(one.dy.equal(many.dy));
    EXPECT_TRUE(one.dgelu_bias.equal(many.dgelu_bias));
    EXPECT_TRUE(one.dw.equal(many.dw));
    EXPECT_TRUE(one.db.equal(many.db));
  }
}

// kernels::LinearGeluLayerNorm takes the fused kernel on the CPU, under bf16 autocast and in
// float32, and agrees with the float64 composition norm(GELU(linear(x))) in its output and in the
// linear's and the norm's gradients.
TEST(LayerNormCpuTest, LinearGeluNormMatchesTheComposition) {
  torch::manual_seed(10);
  const std::vector<torch::Tensor> params = {(torch::randn({48, 16}) * 0.3).requires_grad_(),
                                             (torch::randn({48}) * 0.5).requires_grad_(),
                                             torch::empty({48}).uniform_(0.5, 1.5).requires_grad_(),
                                             (torch::randn({48}) * 0.1).requires_grad_()};
  const torch::Tensor x = torch::randn({70, 16});
  const torch::Tensor dout = torch::randn({70, 48});
  const auto run = [&](bool bf16) {
    for (const auto& p : params) p.mutable_grad() = torch::Tensor();
    torch::Tensor out;
    {
      AutocastScope autocast(bf16);
      out = kernels::LinearGeluLayerNorm(x, params[0], params[1], params[2], params[3], 1e-5);
    }
    EXPECT_EQ(out.scalar_type(), bf16 ? torch::kBFloat16 : torch::kFloat);
    // out is a view of the kernel's output; the kernel adds the linear's bias (its second input).
    const auto& kernel = out.grad_fn()->next_edges().at(0).function;
    EXPECT_NE(kernel->name().find("LayerNormFunction"), std::string::npos) << kernel->name();
    EXPECT_TRUE(kernel->next_edges().at(1).is_valid());
    (out.to(torch::kFloat) * dout).sum().backward();
    std::vector<torch::Tensor> got = {out.detach().to(torch::kDouble)};
    for (const auto& p : params) got.push_back(p.grad().to(torch::kDouble));
    return got;
  };
  std::vector<torch::Tensor> p64;
  for (const auto& p : params) p64.push_back(p.detach().to(torch::kDouble).requires_grad_());
  const torch::Tensor out64 = torch::layer_norm(
      torch::gelu(torch::linear(x.to(torch::kDouble), p64[0], p64[1])), {48}, p64[2], p64[3], 1e-5);
  (out64 * dout.to(torch::kDouble)).sum().backward();
  std::vector<torch::Tensor> ref = {out64.detach()};
  for (const auto& p : p64) ref.push_back(p.grad());
  for (const bool bf16 : {true, false}) {
    const auto got = run(bf16);
    for (size_t k = 0; k < ref.size(); ++k) {
      SCOPED_TRACE(::testing::Message() << "bf16 " << bf16 << " tensor " << k);
      // bf16 inputs and matmuls: a few bf16 roundings of error, against the tensor's scale;
      // float32: a few float roundings.
      const double scale = ref[k].abs().max().item<double>();
      EXPECT_LT((got[k] - ref[k]).abs().max().item<double>(), (bf16 ? 0.03 : 1e-5) * scale);
    }
  }
}

// kernels::LayerNorm: bf16 in, bf16 out on the CPU (3-D inputs too); fp32 in, fp32 out, but
// bf16 out under bf16 autocast when it only feeds matmuls.
TEST(LayerNormCpuTest, LayerNormOpUsesItForBf16) {
  const torch::Tensor ones = torch::ones({8}), zeros = torch::zeros({8});
  const auto norm = [&](const torch::Tensor& x) {
    return kernels::LayerNorm(x, ones, zeros, 1e-5);
  };
  const auto pre_matmul = [&](const torch::Tensor& x) {
    return kernels::LayerNorm(x, ones, zeros, 1e-5, /*feeds_matmuls=*/true);
  };
  const torch::Tensor x = torch::randn({3, 4, 8});
  const torch::Tensor yb = norm(x.to(torch::kBFloat16));
  EXPECT_EQ(yb.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(yb.sizes(), x.sizes());
  const torch::Tensor yf = norm(x.to(torch::kBFloat16).to(torch::kFloat));
  EXPECT_EQ(yf.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::allclose(yb.to(torch::kFloat), yf, 1.0 / 64, 1e-2));

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

// AddLayerNorm against what it replaces: ATen's x + delta (float32) and the LayerNorm of the sum
// (LayerNormBf16 for a bf16 delta, ATen's float32 layer_norm for a float32 one), with autograd
// summing the sum's two gradients (and casting a bf16 delta's). The sum is the same bits (one
// float add of the same values); the rest within one rounding of the result's type.
struct AddNormGrads {
  torch::Tensor sum, y, dx, ddelta, dw, db;
};

AddNormGrads AddNormalize(bool fused, const torch::Tensor& x0, const torch::Tensor& delta0,
                          const torch::Tensor& w0, const torch::Tensor& b0,
                          const torch::Tensor& dsum, const torch::Tensor& dy) {
  const torch::Tensor x = x0.clone().requires_grad_(), delta = delta0.clone().requires_grad_();
  const torch::Tensor w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
  const auto act = delta.scalar_type();
  torch::Tensor sum, y;
  if (fused) {
    std::tie(sum, y) = AddLayerNorm(x, delta, w, b, 1e-5);
  } else {
    sum = x + delta;
    y = act == torch::kBFloat16 ? LayerNormBf16(sum, w, b, 1e-5)
                                : torch::layer_norm(sum, {sum.size(1)}, w, b, 1e-5);
  }
  EXPECT_EQ(sum.scalar_type(), torch::kFloat32);
  EXPECT_EQ(y.scalar_type(), act);
  torch::Tensor loss = (y.to(torch::kDouble) * dy.to(torch::kDouble)).sum();
  if (dsum.defined()) loss = loss + (sum.to(torch::kDouble) * dsum).sum();  // else y alone
  loss.backward();
  EXPECT_EQ(delta.grad().scalar_type(), act);
  const auto f64 = [](const torch::Tensor& t) { return t.detach().to(torch::kDouble); };
  return {f64(sum), f64(y), f64(x.grad()), f64(delta.grad()), f64(w.grad()), f64(b.grad())};
}

TEST(LayerNormCpuTest, AddLayerNormMatchesTheAddThenTheLayerNorm) {
  torch::manual_seed(11);
  for (const auto act : {torch::kBFloat16, torch::kFloat32}) {
    for (const int64_t d : {5, 16, 128, 384}) {  // below, at and off the lane width; d_model
      for (const bool sum_read_elsewhere : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << act << " d " << d << " sum read " << sum_read_elsewhere);
        const int64_t N = 300;  // several 64-row blocks and a partial one
        const torch::Tensor x = torch::randn({N, d}) * 3 - 1;  // the float32 residual stream
        const torch::Tensor delta = (torch::randn({N, d}) * 0.5).to(act);
        const torch::Tensor w = torch::randn({d}) * 0.5 + 1, b = torch::randn({d}) * 0.1;
        const torch::Tensor dsum =
            sum_read_elsewhere ? torch::randn({N, d}, torch::kDouble) : torch::Tensor();
        const torch::Tensor dy = torch::randn({N, d}).to(act);
        const AddNormGrads f = AddNormalize(true, x, delta, w, b, dsum, dy);
        const AddNormGrads r = AddNormalize(false, x, delta, w, b, dsum, dy);
        EXPECT_TRUE(f.sum.equal(r.sum));
        const double ulp = act == torch::kBFloat16 ? 1.0 / 128 : 1e-5;
        EXPECT_TRUE(Near(f.y, r.y, ulp, 1e-6)) << (f.y - r.y).abs().max();
        const double dx_scale = r.dx.abs().max().item<double>();
        EXPECT_TRUE(Near(f.dx, r.dx, 1e-5, 1e-6 * dx_scale)) << (f.dx - r.dx).abs().max();
        EXPECT_TRUE(Near(f.ddelta, r.ddelta, ulp, 1e-6 * dx_scale))
            << (f.ddelta - r.ddelta).abs().max();
        // Sums over rows in float (in another order than ATen's, for a float32 delta).
        const auto near_sum = [](const torch::Tensor& a, const torch::Tensor& e) {
          return Near(a, e, 1e-5, 1e-5 * e.abs().max().item<double>());
        };
        EXPECT_TRUE(near_sum(f.dw, r.dw)) << (f.dw - r.dw).abs().max();
        EXPECT_TRUE(near_sum(f.db, r.db)) << (f.db - r.db).abs().max();
      }
    }
  }
}

TEST(LayerNormCpuTest, AddLayerNormSameBitsForAnyThreadCount) {
  torch::manual_seed(12);
  for (const auto act : {torch::kBFloat16, torch::kFloat32}) {
    SCOPED_TRACE(act);
    const torch::Tensor x = torch::randn({517, 96}) * 2;
    const torch::Tensor delta = torch::randn({517, 96}).to(act);
    const torch::Tensor w = torch::rand({96}) + 0.5, b = torch::randn({96});
    const torch::Tensor dsum = torch::randn({517, 96}, torch::kDouble);
    const torch::Tensor dy = torch::randn({517, 96}).to(act);
    const auto [one, many] =
        testing::AtOneAndManyThreads([&] { return AddNormalize(true, x, delta, w, b, dsum, dy); });
    EXPECT_TRUE(one.sum.equal(many.sum));
    EXPECT_TRUE(one.y.equal(many.y));
    EXPECT_TRUE(one.dx.equal(many.dx));
    EXPECT_TRUE(one.ddelta.equal(many.ddelta));
    EXPECT_TRUE(one.dw.equal(many.dw));
    EXPECT_TRUE(one.db.equal(many.db));
  }
}

// kernels::AddLayerNorm takes the kernel where the LayerNorm of the float32 sum would write
// delta's dtype: bf16 (a norm that feeds matmuls, under bf16 autocast, a bf16 delta) or float32
// (a float32 delta where the norm writes float32), and returns the plain add and norm
// everywhere else.
TEST(LayerNormCpuTest, AddLayerNormOpTakesTheKernelWhereItApplies) {
  torch::manual_seed(13);
  struct Norm {
    bool feeds_matmuls;
    std::pair<torch::Tensor, torch::Tensor> AddAndNormalize(const torch::Tensor& x,
                                                            const torch::Tensor& delta) const {
      return kernels::AddLayerNorm(x, delta, torch::ones({8}), torch::zeros({8}), 1e-5,
                                   feeds_matmuls);
    }
    torch::Tensor operator()(const torch::Tensor& x) const {
      return kernels::LayerNorm(x, torch::ones({8}), torch::zeros({8}), 1e-5, feeds_matmuls);
    }
  };
  const Norm pre_matmul{true}, plain{false};
  const torch::Tensor x = torch::randn({12, 8});  // the blocks' (N, d) rows
  const torch::Tensor delta = torch::randn({12, 8}).to(torch::kBFloat16);
  const auto from_kernel = [](const torch::Tensor& sum) {
    return sum.grad_fn() != nullptr &&
           sum.grad_fn()->name().find("AddLayerNorm") != std::string::npos;
  };
  const torch::Tensor xg = x.clone().requires_grad_();
  {
    AutocastScope autocast(true);
    const auto [sum, y] = pre_matmul.AddAndNormalize(xg, delta);
    EXPECT_TRUE(from_kernel(sum)) << sum.grad_fn()->name();
    EXPECT_EQ(sum.sizes(), x.sizes());
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(sum.equal(xg + delta));
    const torch::Tensor ref = torch::layer_norm((x + delta).to(torch::kDouble), {8}, {}, {}, 1e-5);
    EXPECT_TRUE(torch::allclose(y.to(torch::kDouble), ref, 1.0 / 128, 1e-3));

    EXPECT_FALSE(from_kernel(plain.AddAndNormalize(xg, delta).first));  // writes float32
    const auto [same_x, y_only] = pre_matmul.AddAndNormalize(xg, {});   // nothing to add
    EXPECT_TRUE(same_x.is_same(xg));
    EXPECT_TRUE(y_only.equal(pre_matmul(xg)));
    // Other shapes go through the same kernel on their (N, d) rows.
    const auto [sum3, y3] = pre_matmul.AddAndNormalize(xg.view({3, 4, 8}), delta.view({3, 4, 8}));
    EXPECT_TRUE(sum3.equal(sum.view({3, 4, 8})));
    EXPECT_TRUE(y3.equal(y.view({3, 4, 8})));
  }
  // Autocast off: a bf16 delta would be added to give a float32 sum and output, as written.
  EXPECT_FALSE(from_kernel(pre_matmul.AddAndNormalize(xg, delta).first));
  // A float32 delta with autocast off (the float32 step): the kernel, writing float32.
  const torch::Tensor delta32 = torch::randn({12, 8});
  for (const Norm* norm : {&pre_matmul, &plain}) {
    const auto [sum, y] = norm->AddAndNormalize(xg, delta32);
    EXPECT_TRUE(from_kernel(sum)) << sum.grad_fn()->name();
    EXPECT_EQ(y.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(sum.equal(xg + delta32));
    EXPECT_TRUE(torch::allclose(y, torch::layer_norm(xg + delta32, {8}, {}, {}, 1e-5), 1e-5, 1e-5));
  }
}

}  // namespace
}  // namespace gmlp::kernels::cpu
