// kernels::cpu::SoftmaxCrossEntropy against ATen's cross_entropy and argmax: the loss, the gradient
// (fp32 and bf16 logits), the argmax with ties, non-finite rows, and bad arguments.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "kernels/softmax_xent.h"

namespace gmlp::kernels::cpu {
namespace {

// The reference in double: per-row loss and d(sum(w * loss))/d logits.
std::pair<torch::Tensor, torch::Tensor> Reference(const torch::Tensor& logits,
                                                  const torch::Tensor& labels,
                                                  const torch::Tensor& w) {
  const torch::Tensor x = logits.to(torch::kDouble).detach().requires_grad_();
  const torch::Tensor loss = torch::nn::functional::cross_entropy(
      x, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  (loss * w.to(torch::kDouble)).sum().backward();
  return {loss.detach(), x.grad()};
}

TEST(SoftmaxXentTest, LossGradientAndArgmaxMatchAtenInFloat) {
  torch::manual_seed(1);
  for (const int64_t V : {1, 7, 16, 1000, 8192}) {  // below, at and off the lane width
    SCOPED_TRACE(V);
    const int64_t M = 37;
    const torch::Tensor logits = (torch::randn({M, V}) * 4).requires_grad_();
    const torch::Tensor labels = torch::randint(V, {M}, torch::kLong);
    const torch::Tensor w = torch::rand({M});
    const SoftmaxXent out = SoftmaxCrossEntropy(logits, labels);
    (out.loss_M * w).sum().backward();
    const auto [loss, grad] = Reference(logits, labels, w);
    EXPECT_TRUE(torch::allclose(out.loss_M.to(torch::kDouble), loss, 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(logits.grad().to(torch::kDouble), grad, 1e-5, 1e-7))
        << (logits.grad().to(torch::kDouble) - grad).abs().max();
    EXPECT_TRUE(out.argmax_M.equal(logits.detach().argmax(1)));
    EXPECT_FALSE(out.argmax_M.requires_grad());
  }
}

TEST(SoftmaxXentTest, Bf16LogitsReadAndGradientWrittenInBf16) {
  torch::manual_seed(2);
  const int64_t M = 64, V = 8192;
  const torch::Tensor logits = (torch::randn({M, V}) * 3).to(torch::kBFloat16).requires_grad_();
  const torch::Tensor labels = torch::randint(V, {M}, torch::kLong);
  const torch::Tensor w = torch::rand({M});
  const SoftmaxXent out = SoftmaxCrossEntropy(logits, labels);
  EXPECT_EQ(out.loss_M.scalar_type(), torch::kFloat32);
  (out.loss_M * w).sum().backward();
  ASSERT_EQ(logits.grad().scalar_type(), torch::kBFloat16);
  // The reference reads the same bf16 values exactly; the gradient differs by bf16's rounding.
  const auto [loss, grad] = Reference(logits, labels, w);
  EXPECT_TRUE(torch::allclose(out.loss_M.to(torch::kDouble), loss, 1e-5, 1e-5));
  const torch::Tensor err = (logits.grad().to(torch::kDouble) - grad).abs();
  EXPECT_TRUE((err <= grad.abs() * (1.0 / 128) + 1e-12).all().item<bool>()) << err.max();
  // Ties are common in bf16: the first index of the maximum, as ATen's argmax.
  EXPECT_TRUE(out.argmax_M.equal(logits.detach().to(torch::kFloat).argmax(1)));
}

TEST(SoftmaxXentTest, FirstIndexOfTiedMaxima) {
  torch::Tensor logits = torch::zeros({3, 40});
  logits[0][5] = 2;
  logits[0][37] = 2;  // another lane, later
  logits[1][21] = 1;
  logits[1][5] = 1;  // another lane, earlier
  // row 2: all equal: index 0
  const SoftmaxXent out = SoftmaxCrossEntropy(logits, torch::zeros({3}, torch::kLong));
  EXPECT_EQ(out.argmax_M[0].item<int64_t>(), 5);
  EXPECT_EQ(out.argmax_M[1].item<int64_t>(), 5);
  EXPECT_EQ(out.argmax_M[2].item<int64_t>(), 0);
  EXPECT_NEAR(out.loss_M[2].item<float>(), std::log(40.0f), 1e-6);
}

TEST(SoftmaxXentTest, NonFiniteLogitsGiveNaNLossOnlyInTheirRow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  torch::Tensor logits = torch::randn({5, 33});
  logits[0][3] = nan;
  logits[1][30] = inf;
  logits[2].fill_(-inf);
  logits[3][0] = -inf;  // a -inf among finite logits is a zero probability, not an error
  const torch::Tensor labels = torch::tensor({1, 2, 3, 4, 5}, torch::kLong);
  const SoftmaxXent out = SoftmaxCrossEntropy(logits, labels);
  EXPECT_TRUE(std::isnan(out.loss_M[0].item<float>()));
  EXPECT_TRUE(std::isnan(out.loss_M[1].item<float>()));
  EXPECT_TRUE(std::isnan(out.loss_M[2].item<float>()));
  EXPECT_TRUE(std::isfinite(out.loss_M[3].item<float>()));
  EXPECT_NEAR(out.loss_M[4].item<float>(),
              torch::nn::functional::cross_entropy(logits[4].unsqueeze(0), labels.slice(0, 4))
                  .item<float>(),
              1e-5);
}

TEST(SoftmaxXentTest, RejectsBadArguments) {
  const torch::Tensor logits = torch::randn({4, 10});
  EXPECT_THROW(SoftmaxCrossEntropy(logits, torch::tensor({0, 1, 2, 10}, torch::kLong)), c10::Error);
  EXPECT_THROW(SoftmaxCrossEntropy(logits, torch::tensor({0, 1, -1, 2}, torch::kLong)), c10::Error);
  EXPECT_THROW(SoftmaxCrossEntropy(logits, torch::zeros({3}, torch::kLong)), c10::Error);
  EXPECT_THROW(SoftmaxCrossEntropy(logits.to(torch::kDouble), torch::zeros({4}, torch::kLong)),
               c10::Error);
}

}  // namespace
}  // namespace gmlp::kernels::cpu
