// Finite-difference gradient checks in double precision: autograd's gradients of every encoder
// kind (and of the MLM model, through the gather and the tied decoder) against central
// differences on a few entries of every parameter tensor.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/heads.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

using testing::AllTinyConfigs;
using testing::NamedConfig;
using testing::Perturb;
using testing::RandomInput;

// Checks d loss / d p at `per_tensor` random entries of each parameter.
void CheckGradients(torch::nn::Module& module, const std::function<torch::Tensor()>& loss_fn,
                    const std::string& name, int per_tensor) {
  for (auto& p : module.parameters()) p.mutable_grad() = torch::Tensor();
  loss_fn().backward();
  torch::NoGradGuard no_grad;
  const double h = 1e-6;
  int checked = 0;
  for (auto& item : module.named_parameters()) {
    torch::Tensor p = item.value();
    ASSERT_TRUE(p.grad().defined()) << name << ": no gradient for " << item.key();
    torch::Tensor flat = p.view({-1});
    const torch::Tensor grad = p.grad().reshape({-1});
    const torch::Tensor picks = torch::randint(0, flat.numel(), {per_tensor}, torch::kLong);
    for (int k = 0; k < per_tensor; ++k) {
      const int64_t i = picks[k].item<int64_t>();
      const double orig = flat[i].item<double>();
      flat[i].fill_(orig + h);
      const double up = loss_fn().item<double>();
      flat[i].fill_(orig - h);
      const double down = loss_fn().item<double>();
      flat[i].fill_(orig);
      const double numeric = (up - down) / (2 * h);
      const double analytic = grad[i].item<double>();
      EXPECT_NEAR(analytic, numeric, 1e-6 + 1e-5 * std::abs(numeric))
          << name << ": " << item.key() << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

class GradCheckTest : public ::testing::TestWithParam<NamedConfig> {};

TEST_P(GradCheckTest, EncoderMatchesCentralDifferences) {
  EncoderConfig c = GetParam().config;
  c.max_seq_len = 8;
  c.n_layers = 1;
  torch::manual_seed(21);
  auto encoder = MakeEncoder(c);
  encoder->to(torch::kDouble);
  Perturb(*encoder, 0.3, 22);
  encoder->eval();
  const EncoderInput in = RandomInput(c, 7, {7, 4}, 23);  // with padding in row 1
  const torch::Tensor probe = torch::randn({2, 7, c.d_model}, torch::kDouble);
  CheckGradients(
      *encoder, [&] { return (encoder->forward(in) * probe).sum(); }, GetParam().name, 2);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, GradCheckTest, ::testing::ValuesIn(AllTinyConfigs()),
                         [](const auto& info) { return info.param.name; });

TEST(GradCheckTest, MlmModelThroughGatherAndTiedDecoder) {
  for (const char* arch : {"transformer", "gmlp"}) {
    EncoderConfig c = testing::TinyConfig(arch);
    c.max_seq_len = 8;
    c.n_layers = 1;
    torch::manual_seed(31);
    MlmModel model(c);
    model->to(torch::kDouble);
    Perturb(*model, 0.3, 32);
    model->eval();
    const EncoderInput in = RandomInput(c, 6, {6, 5}, 33);
    const torch::Tensor masked = torch::tensor({1L, 4L, 8L}, torch::kLong);
    const torch::Tensor targets = torch::tensor({3L, 0L, 11L}, torch::kLong);
    CheckGradients(
        *model, [&] { return torch::cross_entropy_loss(model->forward(in, masked), targets); },
        std::string("mlm_") + arch, 2);
  }
}

}  // namespace
}  // namespace gmlp::model
