// kernels::AddMm, Linear and BatchedMm (gemm.h's products where ops.h takes them) against ATen's
// addmm / linear / matmul, differentiated by autograd: the accumulating path must give the same
// values and gradients (for every operand and bias shape the encoders use), and take that path only
// for float32 CPU tensors outside autocast.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "kernels/autocast.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"

namespace gmlp::kernels::cpu {
namespace {

using Product = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// The product and the gradients of every input under a random output gradient.
std::vector<torch::Tensor> ValueAndGrads(const Product& f, const std::vector<torch::Tensor>& in0,
                                         const torch::Tensor& dout) {
  std::vector<torch::Tensor> in;
  for (const torch::Tensor& t : in0) {
    in.push_back(t.defined() ? t.detach().clone().requires_grad_() : torch::Tensor());
  }
  const torch::Tensor out = f(in);
  out.backward(dout);
  std::vector<torch::Tensor> r = {out.detach()};
  for (const torch::Tensor& t : in) r.push_back(t.defined() ? t.grad() : torch::Tensor());
  return r;
}

// gemm.h's product and ATen's agree in value and in every gradient, to float32 rounding.
void ExpectSameAsAten(const Product& ours, const Product& aten,
                      const std::vector<torch::Tensor>& in, const std::string& what) {
  const torch::Tensor probe = aten(in);
  const torch::Tensor dout = torch::randn(probe.sizes());
  const auto a = ValueAndGrads(ours, in, dout);
  const auto b = ValueAndGrads(aten, in, dout);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(what + ", output/gradient " + std::to_string(i));
    ASSERT_EQ(a[i].defined(), b[i].defined());
    if (!a[i].defined()) continue;
    ASSERT_EQ(a[i].sizes(), b[i].sizes());
    EXPECT_EQ(a[i].scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-5)) << (a[i] - b[i]).abs().max();
  }
}

TEST(GemmTest, AddMmMatchesAtenForEveryBiasShape) {
  torch::manual_seed(1);
  const torch::Tensor a = torch::randn({37, 19}), b = torch::randn({19, 23});
  const Product ours = [](const std::vector<torch::Tensor>& t) {
    return kernels::AddMm(t[0], t[1], t[2]);
  };
  const Product aten = [](const std::vector<torch::Tensor>& t) {
    return t[0].defined() ? torch::addmm(t[0], t[1], t[2]) : torch::mm(t[1], t[2]);
  };
  // A row bias (a linear layer's), a column bias (gMLP's spatial projection), none, a full one.
  ExpectSameAsAten(ours, aten, {torch::randn({23}), a, b}, "row bias");
  ExpectSameAsAten(ours, aten, {torch::randn({37, 1}), a, b}, "column bias");
  ExpectSameAsAten(ours, aten, {torch::Tensor(), a, b}, "no bias");
  ExpectSameAsAten(ours, aten, {torch::randn({37, 23}), a, b}, "full bias");
  // Transposed and sliced operands (views whose strides the BLAS must honour).
  ExpectSameAsAten(ours, aten, {torch::randn({23}), torch::randn({19, 37}).t(), b}, "a^T");
  ExpectSameAsAten(ours, aten,
                   {torch::Tensor(), a, torch::randn({40, 30}).narrow(1, 3, 23).narrow(0, 5, 19)},
                   "sliced b");
}

TEST(GemmTest, LinearMatchesAten) {
  torch::manual_seed(2);
  const torch::Tensor w = torch::randn({23, 19}), bias = torch::randn({23});
  const Product ours = [](const std::vector<torch::Tensor>& t) {
    return kernels::Linear(t[1], t[2], t[0]);
  };
  const Product aten = [](const std::vector<torch::Tensor>& t) {
    return torch::linear(t[1], t[2], t[0]);
  };
  ExpectSameAsAten(ours, aten, {bias, torch::randn({37, 19}), w}, "2-D input");
  ExpectSameAsAten(ours, aten, {torch::Tensor(), torch::randn({37, 19}), w}, "no bias");
  ExpectSameAsAten(ours, aten, {bias, torch::randn({3, 5, 19}), w}, "3-D input");
  // aMLP's expanded attention reads a column block of its weight.
  ExpectSameAsAten(ours, aten,
                   {bias, torch::randn({37, 19}), torch::randn({23, 40}).narrow(1, 7, 19)},
                   "column block of a weight");
}

TEST(GemmTest, BatchedMmMatchesAten) {
  torch::manual_seed(6);
  const Product ours = [](const std::vector<torch::Tensor>& t) {
    return kernels::BatchedMm(t[1], t[2]);
  };
  const Product aten = [](const std::vector<torch::Tensor>& t) {
    return torch::matmul(t[1], t[2]);
  };
  // Attention's shapes: (B, n, a) @ (B, a, n), and (B, H, n, k) with a transposed operand.
  ExpectSameAsAten(ours, aten,
                   {torch::Tensor(), torch::randn({3, 11, 7}), torch::randn({3, 7, 13})}, "3-D");
  ExpectSameAsAten(
      ours, aten,
      {torch::Tensor(), torch::randn({2, 3, 11, 5}), torch::randn({2, 3, 9, 5}).transpose(2, 3)},
      "4-D, b^T");
  EXPECT_THROW(kernels::BatchedMm(torch::randn({2, 3, 4}), torch::randn({3, 4, 5})), c10::Error);
}

// The float64 composition on the same values: the gradients are the right products, not merely
// the ones ATen happens to compute.
TEST(GemmTest, GradientsMatchFloat64) {
  torch::manual_seed(3);
  const torch::Tensor x0 = torch::randn({41, 17}), w0 = torch::randn({29, 17}),
                      b0 = torch::randn({29}), dout = torch::randn({41, 29});
  auto run = [&](torch::Dtype type) {
    const torch::Tensor x = x0.to(type).clone().requires_grad_(),
                        w = w0.to(type).clone().requires_grad_(),
                        b = b0.to(type).clone().requires_grad_();
    const torch::Tensor y = kernels::Linear(x, w, b);
    y.backward(dout.to(type));
    return std::vector<torch::Tensor>{y, x.grad(), w.grad(), b.grad()};
  };
  const auto f32 = run(torch::kFloat32), f64 = run(torch::kFloat64);
  // dx = dout w, dw = dout^T x, db = column sums of dout.
  EXPECT_TRUE(torch::allclose(f64[1], dout.to(torch::kDouble).mm(w0.to(torch::kDouble))));
  EXPECT_TRUE(torch::allclose(f64[2], dout.to(torch::kDouble).t().mm(x0.to(torch::kDouble))));
  for (size_t i = 0; i < f32.size(); ++i) {
    EXPECT_TRUE(torch::allclose(f32[i].to(torch::kDouble), f64[i], 1e-5, 1e-4)) << i;
  }
}

TEST(GemmTest, OnlyTheGradientsAskedForAreComputed) {
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({8, 5});  // data: no gradient
  const torch::Tensor w = torch::randn({6, 5}).requires_grad_();
  const torch::Tensor b = torch::randn({6});  // frozen bias
  kernels::Linear(x, w, b).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(torch::allclose(w.grad(), torch::ones({8, 6}).t().mm(x)));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(b.grad().defined());
}

// ops.h sends a product to gemm.h only for float32 CPU operands outside autocast, under the
// auto policy; everything else is ATen's.
TEST(GemmTest, AccumulatesOnlyForFloat32CpuWithoutAutocast) {
  const torch::Tensor f = torch::randn({4, 4});
  const auto accumulates = [](const torch::Tensor& a, const torch::Tensor& b) {
    const torch::Tensor y = kernels::Linear(a.detach().requires_grad_(), b);
    return y.grad_fn()->name().find("GemmFunction") != std::string::npos;
  };
  EXPECT_TRUE(accumulates(f, f));
  EXPECT_FALSE(accumulates(f.to(torch::kDouble), f.to(torch::kDouble)));
  EXPECT_FALSE(accumulates(f.to(torch::kBFloat16), f.to(torch::kBFloat16)));
  {
    PolicyScope aten(Policy::kAten);
    EXPECT_FALSE(accumulates(f, f));
  }
  {
    AutocastScope autocast(true);
    EXPECT_FALSE(accumulates(f, f));  // autocast casts to bf16 for oneDNN
    EXPECT_EQ(kernels::Linear(f, f).scalar_type(), torch::kBFloat16);
    EXPECT_EQ(kernels::AddMm(torch::Tensor(), f, f).scalar_type(), torch::kBFloat16);
  }
  // Under no_grad the product is computed without the autograd function, to the same values.
  torch::NoGradGuard no_grad;
  const torch::Tensor w = torch::randn({3, 4}).requires_grad_();
  const torch::Tensor y = kernels::Linear(f, w);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(torch::allclose(y, f.mm(w.t())));
}

}  // namespace
}  // namespace gmlp::kernels::cpu
