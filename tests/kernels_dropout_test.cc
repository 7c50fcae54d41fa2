// kernels::cpu::Dropout: the counter-based mask keeps 1 - p of the elements, scales them by 1/(1 -
// p), is a pure function of the seed (reproducible under torch::manual_seed, different per call),
// is the same for every dtype, and backward applies the very mask forward used.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "kernels/dropout.h"

namespace gmlp::kernels::cpu {
namespace {

TEST(DropoutTest, KeepsOneMinusPAndScales) {
  const double p = 0.1;
  const torch::Tensor x = torch::ones({1000, 1000});
  const torch::Tensor y = ApplyDropoutMask(x, p, 12345);
  const double kept = y.ne(0).to(torch::kDouble).mean().item<double>();
  // 1e6 Bernoulli(0.9) draws: standard deviation 3e-4.
  EXPECT_NEAR(kept, 1 - p, 2e-3);
  EXPECT_TRUE(
      torch::allclose(y.masked_select(y.ne(0)), torch::full({1}, 1.0 / (1 - p), torch::kFloat)));
  // No long runs of one decision (a broken hash would keep or drop whole blocks).
  const torch::Tensor row_kept = y.ne(0).to(torch::kFloat).mean(1);
  EXPECT_GT(row_kept.min().item<float>(), 0.85);
  EXPECT_LT(row_kept.max().item<float>(), 0.95);
}

TEST(DropoutTest, MaskIsAFunctionOfTheSeedForEveryDtype) {
  const torch::Tensor x = torch::rand({257, 33}) + 0.5;  // no zeros
  const torch::Tensor a = ApplyDropoutMask(x, 0.3, 7).ne(0);
  EXPECT_TRUE(a.equal(ApplyDropoutMask(x, 0.3, 7).ne(0)));
  EXPECT_FALSE(a.equal(ApplyDropoutMask(x, 0.3, 8).ne(0)));
  EXPECT_TRUE(a.equal(ApplyDropoutMask(x.to(torch::kBFloat16), 0.3, 7).ne(0)));
  EXPECT_TRUE(a.equal(ApplyDropoutMask(x.to(torch::kDouble), 0.3, 7).ne(0)));
  // Element i is kept exactly when DropoutKeeps says so (the float and bf16 loops step the
  // generator's state instead of hashing each index afresh).
  const torch::Tensor flat = a.reshape({-1});
  const uint64_t threshold = DropoutThreshold(0.3);
  int64_t differ = 0;
  for (int64_t i = 0; i < flat.numel(); ++i) {
    differ += flat[i].item<bool>() != DropoutKeeps(7, i, threshold);
  }
  EXPECT_EQ(differ, 0);
  // Threads split the work by index ranges: the mask does not depend on their number.
  const int threads = torch::get_num_threads();
  torch::set_num_threads(1);
  const torch::Tensor one = ApplyDropoutMask(x, 0.3, 7).ne(0);
  torch::set_num_threads(threads);
  EXPECT_TRUE(a.equal(one));
}

// Kept elements are x * (1/(1 - p)) scaled in float and rounded once to the tensor's dtype (the
// float and bf16 loops are vectorized clones; every clone computes these bits).
TEST(DropoutTest, KeptValuesAreScaledInFloatAndRoundedOnce) {
  const double p = 0.1;
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  const torch::Tensor x = torch::randn({1000, 77}) * 3;  // an odd length: the loops' tails too
  const torch::Tensor y = ApplyDropoutMask(x, p, 99);
  const torch::Tensor kept = y.ne(0);
  EXPECT_TRUE(y.masked_select(kept).equal((x * scale).masked_select(kept)));
  // bf16: not scaled by bf16(1/(1 - p)) = 1.109375, which would shrink every kept value by 0.16%.
  const torch::Tensor xb = x.to(torch::kBFloat16);
  const torch::Tensor yb = ApplyDropoutMask(xb, p, 99);
  EXPECT_TRUE(yb.ne(0).equal(kept));
  EXPECT_TRUE(yb.masked_select(kept).equal(
      (xb.to(torch::kFloat) * scale).to(torch::kBFloat16).masked_select(kept)));
  // Non-finite values go through as torch rounds them (NaN stays NaN, inf stays inf).
  const torch::Tensor special =
      torch::tensor({std::nanf(""), INFINITY, -INFINITY, 3.0e38f}).repeat({64});
  const torch::Tensor ys = ApplyDropoutMask(special.to(torch::kBFloat16), 0.0, 1).to(torch::kFloat);
  const torch::Tensor want = (special * 1.0f).to(torch::kBFloat16).to(torch::kFloat);
  EXPECT_TRUE(ys.isnan().equal(want.isnan()));
  EXPECT_TRUE(ys.nan_to_num(0).equal(want.nan_to_num(0)));
}

TEST(DropoutTest, ReproducibleUnderManualSeedAndFreshPerCall) {
  const torch::Tensor x = torch::ones({64, 64});
  torch::manual_seed(3);
  const torch::Tensor a1 = Dropout(x, 0.5, true);
  const torch::Tensor a2 = Dropout(x, 0.5, true);
  torch::manual_seed(3);
  const torch::Tensor b1 = Dropout(x, 0.5, true);
  EXPECT_TRUE(a1.equal(b1));
  EXPECT_FALSE(a1.equal(a2));
}

TEST(DropoutTest, IdentityWhenNotTrainingOrPZero) {
  const torch::Tensor x = torch::randn({5, 7});
  EXPECT_TRUE(Dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(Dropout(x, 0.0, true).is_same(x));
}

TEST(DropoutTest, BackwardAppliesTheForwardMask) {
  const torch::Tensor x = (torch::rand({40, 50}, torch::kDouble) + 0.5).requires_grad_();
  torch::manual_seed(11);
  const torch::Tensor y = Dropout(x, 0.25, true);
  const torch::Tensor w = torch::randn({40, 50}, torch::kDouble);
  (y * w).sum().backward();
  // d/dx sum(w * mask * x / (1 - p)) = w * mask / (1 - p) = w * y / x.
  EXPECT_TRUE(torch::allclose(x.grad(), w * y.detach() / x.detach(), 1e-12, 1e-12));
  EXPECT_GT(y.eq(0).sum().item<int64_t>(), 0);
}

TEST(DropoutTest, NonContiguousInput) {
  const torch::Tensor x = torch::rand({30, 20}).t() + 0.5;
  ASSERT_FALSE(x.is_contiguous());
  const torch::Tensor y = ApplyDropoutMask(x, 0.2, 5);
  EXPECT_TRUE(y.ne(0).equal(ApplyDropoutMask(x.contiguous(), 0.2, 5).ne(0)));
  EXPECT_TRUE(
      torch::allclose(y.masked_select(y.ne(0)), x.contiguous().masked_select(y.ne(0)) / 0.8));
}

}  // namespace
}  // namespace gmlp::kernels::cpu
