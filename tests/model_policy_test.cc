// Every encoder under both kernel policies (kernels/ops.h): a training step's MLM loss and every
// parameter's gradient agree between --kernels=auto and --kernels=aten, in float32 and under
// CPU bf16 autocast, with padding; and the autograd graph shows which ran: gmlp's kernels under
// auto, none of them under aten.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "kernels/autocast.h"
#include "kernels/ops.h"
#include "model/heads.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

using kernels::Policy;
using testing::AllTinyConfigs;
using testing::NamedConfig;
using testing::RandomInput;

struct Step {
  double loss = 0;
  std::vector<torch::Tensor> grads;  // float64, in named_parameters order
  std::vector<std::string> names;
  int kernel_nodes = 0;  // autograd nodes of gmlp's kernels in the loss's graph
};

// The names of every node in the autograd graph below `root`.
int CountKernelNodes(const torch::Tensor& root) {
  std::set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack = {root.grad_fn().get()};
  int kernel = 0;
  while (!stack.empty()) {
    torch::autograd::Node* node = stack.back();
    stack.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    if (node->name().find("gmlp::kernels") != std::string::npos) ++kernel;
    for (const auto& edge : node->next_edges()) stack.push_back(edge.function.get());
  }
  return kernel;
}

Step RunStep(const EncoderConfig& c, Policy policy, bool bf16) {
  const kernels::PolicyScope scope(policy);
  torch::manual_seed(7);
  MlmModel mlm(c);
  mlm->train();
  const EncoderInput in = RandomInput(c, 13, {13, 9, 4}, 3);
  // Positions of real tokens in every row (flat b * n + i), and their labels.
  const torch::Tensor masked = torch::tensor({0, 5, 12, 13, 20, 26, 29}, torch::kLong);
  const torch::Tensor labels = torch::randint(0, c.vocab_size, {masked.size(0)}, torch::kLong);
  torch::Tensor logits;
  {
    kernels::AutocastScope autocast(bf16);
    logits = mlm(in, masked);
  }
  const torch::Tensor loss = kernels::SumCrossEntropy(logits, labels).loss;
  Step s;
  s.kernel_nodes = CountKernelNodes(loss);
  loss.backward();
  s.loss = loss.item<double>();
  for (const auto& p : mlm->named_parameters()) {
    s.names.push_back(p.key());
    s.grads.push_back(p.value().grad().defined() ? p.value().grad().to(torch::kDouble)
                                                 : torch::zeros(p.value().sizes(), torch::kDouble));
  }
  return s;
}

class PolicyTest : public ::testing::TestWithParam<NamedConfig> {};

TEST_P(PolicyTest, AutoAndAtenAgreeAndTheGraphShowsWhichRan) {
  const EncoderConfig& c = GetParam().config;
  // Tensors whose float32 gradient is zero up to rounding: a per-position bias followed by a
  // LayerNorm over channels (the mixer's token_out_bias before the final norm) gets the sum over
  // channels of a gradient that the norm makes sum to zero.
  std::vector<bool> zero_in_float32;
  for (const bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16 autocast" : "float32");
    const Step kernel = RunStep(c, Policy::kAuto, bf16);
    const Step aten = RunStep(c, Policy::kAten, bf16);
    EXPECT_GT(kernel.kernel_nodes, 0);
    EXPECT_EQ(aten.kernel_nodes, 0);
    EXPECT_EQ(kernels::CurrentPolicy(), Policy::kAuto);  // the scope restored it
    // float32: the same sums in another order. bf16: ATen rounds intermediates (the bias, GELU's
    // output, the norms' inputs) to bf16 where the kernels keep them in float.
    const double tol = bf16 ? 0.05 : 2e-5;
    EXPECT_NEAR(kernel.loss, aten.loss, tol * std::abs(aten.loss));
    ASSERT_EQ(kernel.grads.size(), aten.grads.size());
    // Each tensor against its own largest entry, floored at 1e-4 of the largest of all, so that
    // rounding noise in a gradient that is zero up to rounding is no disagreement. Under bf16 the
    // noise in those (found by the float32 pass) is bf16's: they are floored at its unit
    // roundoff, 2^-8, of the largest (measured on an AVX2-only VM, whose oneDNN emulates bf16:
    // 3e-4 of a largest 3.1 in the mixer's token_out_bias).
    double largest = 0;
    for (const torch::Tensor& g : aten.grads)
      largest = std::max(largest, g.abs().max().item<double>());
    double worst = 0;
    std::string worst_name;
    for (size_t i = 0; i < aten.grads.size(); ++i) {
      const double own = aten.grads[i].abs().max().item<double>();
      if (!bf16) zero_in_float32.push_back(own < 1e-4 * largest);
      const double floor = (bf16 && zero_in_float32[i] ? 0x1p-8 : 1e-4) * largest;
      const double scale = std::max(own, floor);
      const double rel = (kernel.grads[i] - aten.grads[i]).abs().max().item<double>() / scale;
      if (rel > worst) worst_name = kernel.names[i] + " (max " + std::to_string(scale) + ")";
      worst = std::max(worst, rel);
    }
    EXPECT_LT(worst, bf16 ? 0.1 : 1e-3)
        << "largest gradient difference, relative to its tensor: " << worst_name;
  }
  // The float32 pass found the mixer's structural zeros, and nothing else is floored at bf16's.
  if (GetParam().name == "mixer") {
    EXPECT_GT(std::count(zero_in_float32.begin(), zero_in_float32.end(), true), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllEncoders, PolicyTest, ::testing::ValuesIn(AllTinyConfigs()),
                         [](const auto& info) { return info.param.name; });

TEST(PolicyTest, ParseAndName) {
  EXPECT_EQ(kernels::ParsePolicy("auto"), Policy::kAuto);
  EXPECT_EQ(kernels::ParsePolicy("aten"), Policy::kAten);
  EXPECT_FALSE(kernels::ParsePolicy("Aten").has_value());
  EXPECT_FALSE(kernels::ParsePolicy("").has_value());
  EXPECT_STREQ(kernels::PolicyName(Policy::kAten), "aten");
  EXPECT_STREQ(kernels::PolicyName(Policy::kAuto), "auto");
}

}  // namespace
}  // namespace gmlp::model
