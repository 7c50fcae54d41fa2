// kernels/ops.h: the policy's switch, and the ops whose dispatch no kernel test covers
// (SumCrossEntropy, Attention off bf16, Dropout). Under kAten every op is ATen's composition as
// written: the same bits as calling ATen directly.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "kernels/autocast.h"
#include "kernels/ops.h"

namespace gmlp::kernels {
namespace {

// The training step's and evaluation's loss against ATen's cross_entropy in float64 on the same
// logits: the fused CPU path for float32 and bf16 logits, ATen's for float64 and under kAten.
TEST(SumCrossEntropyTest, MatchesCrossEntropyInFloat64UnderBothPolicies) {
  torch::manual_seed(3);
  const torch::Tensor logits = torch::randn({37, 101}) * 3;
  const torch::Tensor labels = torch::randint(0, 101, {37}, torch::kLong);
  for (const Policy policy : {Policy::kAuto, Policy::kAten}) {
    const PolicyScope scope(policy);
    for (const auto type : {torch::kFloat32, torch::kBFloat16, torch::kFloat64}) {
      SCOPED_TRACE(::testing::Message() << PolicyName(policy) << " " << type);
      const torch::Tensor x = logits.to(type).clone().requires_grad_();  // a fresh leaf
      const CrossEntropySum loss = SumCrossEntropy(x, labels);
      EXPECT_EQ(loss.loss.scalar_type(), torch::kFloat32);
      const torch::Tensor x64 = x.detach().to(torch::kFloat64).requires_grad_();
      const torch::Tensor ref = torch::nn::functional::cross_entropy(
          x64, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
      EXPECT_NEAR(loss.loss.item<double>(), ref.item<double>(), 1e-5 * ref.item<double>());
      EXPECT_TRUE(loss.argmax.equal(x64.argmax(1)));
      loss.loss.backward();
      ref.backward();
      EXPECT_TRUE(torch::allclose(x.grad().to(torch::kFloat64), x64.grad(),
                                  type == torch::kBFloat16 ? 1.0 / 64 : 1e-5, 1e-3));
    }
  }
}

// The attention composition written out in float64: heads of width k from the rows [q | k | v].
torch::Tensor ReferenceAttention(const torch::Tensor& qkv, int64_t n, int64_t B, int64_t H,
                                 const torch::Tensor& key_bias, const torch::Tensor& score_bias) {
  const int64_t k = qkv.size(1) / (3 * H);
  const torch::Tensor x = qkv.to(torch::kDouble).view({n, B, 3, H, k});
  const torch::Tensor q = x.select(2, 0).permute({1, 2, 0, 3});
  const torch::Tensor kk = x.select(2, 1).permute({1, 2, 0, 3});
  const torch::Tensor v = x.select(2, 2).permute({1, 2, 0, 3});
  torch::Tensor s = torch::matmul(q, kk.transpose(2, 3)) / std::sqrt(static_cast<double>(k));
  if (score_bias.defined()) s = s + score_bias.to(torch::kDouble);
  if (key_bias.defined()) s = s + key_bias.to(torch::kDouble).unsqueeze(1);
  const torch::Tensor o = torch::matmul(torch::softmax(s, -1), v);  // (B, H, n, k)
  return o.permute({2, 0, 1, 3}).reshape({n * B, H * k});
}

// float32 attention (one head as aMLP's, several as the Transformer's, with ALiBi-like score
// biases and padded keys) under both policies against the float64 composition, in value and in
// the rows' gradient; and bf16 rows under kAuto take the fused kernel.
TEST(AttentionOpTest, MatchesTheCompositionUnderBothPolicies) {
  torch::manual_seed(4);
  const int64_t n = 7, B = 3;
  const torch::Tensor key_bias =
      torch::tensor({0.f, 0.f, 0.f, 0.f, 0.f, -1e9f, -1e9f}).view({1, 1, n}).repeat({B, 1, 1});
  for (const int64_t H : {1, 2}) {
    const int64_t k = 4;
    const torch::Tensor rows = torch::randn({n * B, 3 * H * k});
    const torch::Tensor score_bias = H > 1 ? torch::randn({H, n, n}) : torch::Tensor();
    const torch::Tensor dout = torch::randn({n * B, H * k});
    const torch::Tensor r64 = rows.to(torch::kDouble).requires_grad_();
    const torch::Tensor ref = ReferenceAttention(r64, n, B, H, key_bias, score_bias);
    ref.backward(dout.to(torch::kDouble));
    for (const Policy policy : {Policy::kAuto, Policy::kAten}) {
      SCOPED_TRACE(::testing::Message() << PolicyName(policy) << " heads " << H);
      const PolicyScope scope(policy);
      const torch::Tensor x = rows.clone().requires_grad_();
      const torch::Tensor out = Attention(x, n, B, H, key_bias, score_bias, 0.0, true);
      ASSERT_EQ(out.sizes(), ref.sizes());
      EXPECT_TRUE(torch::allclose(out.to(torch::kDouble), ref, 1e-5, 1e-5));
      out.backward(dout);
      EXPECT_TRUE(torch::allclose(x.grad().to(torch::kDouble), r64.grad(), 1e-4, 1e-5));
    }
    const torch::Tensor bf = rows.to(torch::kBFloat16).requires_grad_();
    const torch::Tensor fused = Attention(bf, n, B, H, key_bias, score_bias, 0.0, true);
    EXPECT_NE(fused.grad_fn()->name().find("gmlp::kernels"), std::string::npos)
        << fused.grad_fn()->name();
    EXPECT_TRUE(torch::allclose(fused.to(torch::kDouble),
                                ReferenceAttention(bf, n, B, H, key_bias, score_bias), 0.02, 0.02));
  }
  EXPECT_THROW(Attention(torch::zeros({6, 10}), 3, 2, 2, {}, {}, 0.0, false), c10::Error);
}

// Dropout: the identity when not training or p = 0 (the same tensor); under kAuto the
// counter-based kernel, reproducible from the seed; under kAten torch::dropout, the same bits as
// calling it with the same generator state.
TEST(DropoutOpTest, PolicyChoosesTheMask) {
  const torch::Tensor x = torch::ones({4096});
  EXPECT_TRUE(Dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(Dropout(x, 0.0, true).is_same(x));
  torch::manual_seed(9);
  const torch::Tensor a = Dropout(x, 0.25, true);
  torch::manual_seed(9);
  EXPECT_TRUE(Dropout(x, 0.25, true).equal(a));
  const double kept = a.ne(0).sum().item<double>() / x.numel();
  EXPECT_NEAR(kept, 0.75, 0.03);
  const PolicyScope aten(Policy::kAten);
  torch::manual_seed(9);
  const torch::Tensor b = Dropout(x, 0.25, true);
  torch::manual_seed(9);
  EXPECT_TRUE(b.equal(torch::dropout(x, 0.25, true)));
  EXPECT_FALSE(b.equal(a));  // another mask
}

// Under kAten the fused ops are ATen's compositions, bit for bit, in float32 and under bf16
// autocast (where ATen's LayerNorm output is float32).
TEST(AtenPolicyTest, OpsAreTheAtenCompositions) {
  torch::manual_seed(5);
  const PolicyScope aten(Policy::kAten);
  const torch::Tensor x = torch::randn({6, 8}), w = torch::randn({12, 8}), b = torch::randn({12});
  const torch::Tensor gate = torch::randn({6, 12});
  const torch::Tensor nw = torch::rand({12}) + 0.5, nb = torch::randn({12});
  for (const bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16);
    AutocastScope autocast(bf16);
    const torch::Tensor y = torch::linear(x, w, b);
    EXPECT_TRUE(Linear(x, w, b).equal(y));
    EXPECT_TRUE(LinearGelu(x, w, b, gate).equal(torch::gelu(y) * gate));
    const torch::Tensor z = torch::gelu(y);
    const torch::Tensor ln = torch::layer_norm(
        z.scalar_type() == torch::kBFloat16 ? z.to(torch::kFloat) : z, {12}, nw, nb, 1e-5);
    EXPECT_TRUE(LinearGeluLayerNorm(x, w, b, nw, nb, 1e-5).equal(ln));
    EXPECT_EQ(LayerNorm(x, torch::ones({8}), torch::zeros({8}), 1e-5, true).scalar_type(),
              torch::kFloat32);
    const auto [sum, normed] = AddLayerNorm(x, x, torch::ones({8}), torch::zeros({8}), 1e-5);
    EXPECT_TRUE(sum.equal(x + x));
    EXPECT_TRUE(normed.equal(torch::layer_norm(x + x, {8}, torch::ones({8}), torch::zeros({8}))));
  }
}

}  // namespace
}  // namespace gmlp::kernels
