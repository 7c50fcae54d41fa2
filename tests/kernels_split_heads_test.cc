// kernels::cpu::SplitHeads (split_heads.h), which the float32 CPU attention of several heads uses.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "kernels/split_heads.h"

namespace gmlp::kernels::cpu {
namespace {

// SplitHeads against ATen's composition (unbind, permute, the scale): the same values, and the
// same gradient of the rows, including a zero block for an output the loss does not read.
TEST(SplitHeadsTest, MatchesUnbindAndPermute) {
  torch::manual_seed(21);
  const int64_t n = 5, B = 3, H = 2, k = 4;
  const double scale = 1.0 / std::sqrt(static_cast<double>(k));
  const torch::Tensor rows = torch::randn({n * B, 3 * H * k});
  const torch::Tensor dq = torch::randn({B, H, n, k}), dv = torch::randn({B, H, n, k});
  torch::Tensor outs[2][3], grads[2];
  for (const int fused : {0, 1}) {
    const torch::Tensor x = rows.clone().requires_grad_();
    if (fused) {
      const auto qkv = SplitHeads(x, n, B, H, scale);
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(qkv[i].is_contiguous());
        outs[1][i] = qkv[i];
      }
    } else {
      const auto parts = x.view({n, B, 3, H, k}).unbind(2);
      for (int i = 0; i < 3; ++i) outs[0][i] = parts[i].permute({1, 2, 0, 3});
      outs[0][0] = outs[0][0] * scale;
    }
    (outs[fused][0] * dq).sum().add((outs[fused][2] * dv).sum()).backward();  // k unused
    grads[fused] = x.grad();
  }
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(outs[1][i].sizes(), (torch::IntArrayRef{B, H, n, k}));
    EXPECT_TRUE(outs[1][i].equal(outs[0][i]));
  }
  EXPECT_TRUE(grads[1].equal(grads[0]));
  // The k block of the gradient is zero, the q block the scaled upstream gradient.
  const torch::Tensor g = grads[1].view({n, B, 3, H, k});
  EXPECT_EQ(g.select(2, 1).abs().max().item<float>(), 0.0f);
  EXPECT_TRUE(g.select(2, 0).permute({1, 2, 0, 3}).equal(dq * scale));
}

TEST(SplitHeadsTest, RejectsRowsThatAreNotThreeHeadsWide) {
  EXPECT_THROW(SplitHeads(torch::zeros({6, 10}), 3, 2, 2, 1.0), c10::Error);
  EXPECT_THROW(SplitHeads(torch::zeros({7, 12}), 3, 2, 2, 1.0), c10::Error);
}

}  // namespace
}  // namespace gmlp::kernels::cpu
