// The encoders' shared modules in model/layers.h that no parity test reaches alone.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "model/layers.h"

namespace gmlp::model {
namespace {

TEST(DenseTest, KeepsLinearsParameterNamesAndInitialization) {
  torch::manual_seed(5);
  Dense dense(64, 256, 0.02);
  const auto params = dense->named_parameters();
  ASSERT_EQ(params.size(), 2u);
  ASSERT_TRUE(params.contains("weight") && params.contains("bias"));
  EXPECT_EQ(params["weight"].sizes(), (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(params["bias"].sizes(), (std::vector<int64_t>{256}));
  EXPECT_TRUE(params["bias"].eq(0).all().item<bool>());
  EXPECT_NEAR(params["weight"].std().item<double>(), 0.02, 0.002);
  const torch::Tensor x = torch::randn({7, 64});
  EXPECT_TRUE(torch::allclose(dense(x), torch::linear(x, dense->weight, dense->bias)));
}

}  // namespace
}  // namespace gmlp::model
