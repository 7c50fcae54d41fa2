// Optimizers, schedule, clipping and configuration of the pretrainer, against hand-computed
// numbers.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>

#include "pretrain/dist.h"
#include "pretrain/optimizer.h"
#include "pretrain/schedule.h"
#include "pretrain/train_config.h"
#include "tests/pretrain_test_util.h"

namespace gmlp::pretrain {
namespace {

TEST(ScheduleTest, LinearWarmupThenLinearDecay) {
  ScheduleOptions o{/*lr=*/1.0, /*warmup_steps=*/4, /*total_steps=*/12, "linear", 0.0};
  EXPECT_DOUBLE_EQ(LearningRate(o, 0), 0.25);
  EXPECT_DOUBLE_EQ(LearningRate(o, 1), 0.5);
  EXPECT_DOUBLE_EQ(LearningRate(o, 3), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(o, 4), 1.0);     // decay starts at the peak
  EXPECT_DOUBLE_EQ(LearningRate(o, 8), 0.5);     // halfway through the 8 decay steps
  EXPECT_DOUBLE_EQ(LearningRate(o, 11), 0.125);  // last step
  EXPECT_DOUBLE_EQ(LearningRate(o, 12), 0.0);
  o.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(LearningRate(o, 8), 0.1 + 0.9 * 0.5);
  EXPECT_DOUBLE_EQ(LearningRate(o, 12), 0.1);
}

TEST(ScheduleTest, Cosine) {
  ScheduleOptions o{/*lr=*/2.0, /*warmup_steps=*/0, /*total_steps=*/10, "cosine", 0.0};
  EXPECT_DOUBLE_EQ(LearningRate(o, 0), 2.0);
  EXPECT_NEAR(LearningRate(o, 5), 1.0, 1e-12);
  EXPECT_NEAR(LearningRate(o, 2), 1.0 + std::cos(M_PI * 0.2), 1e-12);
  EXPECT_NEAR(LearningRate(o, 10), 0.0, 1e-12);
}

TEST(OptimizerTest, AdamWTwoStepsByHand) {
  // w (2-D, decayed) and b (1-D, not decayed); gradients set by hand each step.
  torch::Tensor w = torch::tensor({{1.0, -2.0}}, torch::kFloat64).requires_grad_();
  torch::Tensor b = torch::tensor({0.5}, torch::kFloat64).requires_grad_();
  OptimizerOptions o;
  o.kind = "adamw";
  o.weight_decay = 0.1;
  o.beta1 = 0.9;
  o.beta2 = 0.99;
  o.eps = 1e-8;
  Optimizer opt({w, b}, o);
  const double lr = 0.01;
  const double g1[3] = {0.3, -0.4, 2.0}, g2[3] = {-0.1, 0.2, 1.0};
  double p[3] = {1.0, -2.0, 0.5}, m[3] = {0, 0, 0}, v[3] = {0, 0, 0};
  for (int t = 1; t <= 2; ++t) {
    const double* g = t == 1 ? g1 : g2;
    w.mutable_grad() = torch::tensor({{g[0], g[1]}}, torch::kFloat64);
    b.mutable_grad() = torch::tensor({g[2]}, torch::kFloat64);
    opt.Step(lr);
    for (int i = 0; i < 3; ++i) {
      const double wd = i < 2 ? 0.1 : 0.0;
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.99 * v[i] + 0.01 * g[i] * g[i];
      const double mhat = m[i] / (1 - std::pow(0.9, t));
      const double vhat = v[i] / (1 - std::pow(0.99, t));
      p[i] = p[i] * (1 - lr * wd) - lr * mhat / (std::sqrt(vhat) + 1e-8);
    }
  }
  EXPECT_NEAR(w[0][0].item<double>(), p[0], 1e-12);
  EXPECT_NEAR(w[0][1].item<double>(), p[1], 1e-12);
  EXPECT_NEAR(b[0].item<double>(), p[2], 1e-12);
  // First step moves each weight by about lr against its gradient's sign.
  EXPECT_NEAR(p[2], 0.5 - 0.01 - 0.01 * (1 + 0.0), 2e-3);
  EXPECT_EQ(opt.step_count(), 2);
}

TEST(OptimizerTest, AdamWMatchesTorchOptimAdamW) {
  torch::manual_seed(3);
  torch::Tensor a = torch::randn({4, 3}).requires_grad_();
  torch::Tensor ref = a.detach().clone().requires_grad_();
  OptimizerOptions o;
  o.weight_decay = 0.05;
  o.eps = 1e-6;
  Optimizer opt({a}, o);
  torch::optim::AdamW torch_opt({ref},
                                torch::optim::AdamWOptions(0.02).weight_decay(0.05).eps(1e-6));
  for (int t = 0; t < 5; ++t) {
    torch::Tensor g = torch::randn({4, 3});
    a.mutable_grad() = g.clone();
    ref.mutable_grad() = g.clone();
    opt.Step(0.02);
    torch_opt.step();
  }
  EXPECT_TRUE(torch::allclose(a, ref, 1e-6, 1e-7)) << (a - ref).abs().max();
}

TEST(OptimizerTest, LambOneStepByHand) {
  // p = [3, 4] (norm 5), g = [1, -2]. After one step m_hat = g and v_hat = g^2, so the Adam
  // direction is g / (|g| + eps) = [1, -1] (eps 0 up to 1e-12); u = [1, -1] + wd p.
  torch::Tensor p = torch::tensor({{3.0, 4.0}}, torch::kFloat64).requires_grad_();
  OptimizerOptions o;
  o.kind = "lamb";
  o.weight_decay = 0.5;
  o.eps = 1e-12;
  Optimizer opt({p}, o);
  p.mutable_grad() = torch::tensor({{1.0, -2.0}}, torch::kFloat64);
  opt.Step(0.1);
  const double u0 = 1 + 0.5 * 3, u1 = -1 + 0.5 * 4;  // 2.5, 1.0
  const double trust = 5.0 / std::sqrt(u0 * u0 + u1 * u1);
  EXPECT_NEAR(p[0][0].item<double>(), 3.0 - 0.1 * trust * u0, 1e-9);
  EXPECT_NEAR(p[0][1].item<double>(), 4.0 - 0.1 * trust * u1, 1e-9);
  // The update's norm is lr * ||p||, whatever the gradient's scale: LAMB's layer-wise trust.
  torch::Tensor q = torch::tensor({{3.0, 4.0}}, torch::kFloat64).requires_grad_();
  Optimizer opt2({q}, o);
  q.mutable_grad() = torch::tensor({{1000.0, -2000.0}}, torch::kFloat64);
  opt2.Step(0.1);
  EXPECT_NEAR((q - torch::tensor({{3.0, 4.0}}, torch::kFloat64)).norm().item<double>(), 0.5, 1e-9);
}

TEST(OptimizerTest, NoDecayOnBiasesAndLayerNorm) {
  EXPECT_TRUE(DecaysWeight(torch::zeros({3, 4})));
  EXPECT_FALSE(DecaysWeight(torch::zeros({4})));
  torch::Tensor bias = torch::ones({2}).requires_grad_();
  OptimizerOptions o;
  o.weight_decay = 0.5;
  Optimizer opt({bias}, o);
  bias.mutable_grad() = torch::zeros({2});
  opt.Step(0.1);
  EXPECT_TRUE(torch::equal(bias, torch::ones({2})));  // no gradient, no decay: unchanged
}

TEST(OptimizerTest, SaveLoadIsBitwise) {
  const std::string dir = testing::FreshTempDir("optim_save");
  torch::manual_seed(1);
  torch::Tensor a = torch::randn({5, 2}).requires_grad_();
  torch::Tensor a2 = a.detach().clone().requires_grad_();
  Optimizer opt({a}, OptimizerOptions{});
  for (int t = 0; t < 3; ++t) {
    a.mutable_grad() = torch::randn({5, 2});
    opt.Step(0.01);
  }
  ASSERT_TRUE(opt.Save(dir + "/opt.pt").ok());
  Optimizer restored({a2}, OptimizerOptions{});
  absl::Status load = restored.Load(dir + "/opt.pt");
  ASSERT_TRUE(load.ok()) << load;
  EXPECT_EQ(restored.step_count(), 3);
  a2.detach().copy_(a.detach());
  torch::Tensor g = torch::randn({5, 2});
  a.mutable_grad() = g.clone();
  a2.mutable_grad() = g.clone();
  opt.Step(0.01);
  restored.Step(0.01);
  EXPECT_TRUE(torch::equal(a, a2));
  // A state for another architecture is refused with a clear message.
  torch::Tensor other = torch::zeros({3}).requires_grad_();
  Optimizer wrong({other, other.detach().clone().requires_grad_()}, OptimizerOptions{});
  absl::Status st = wrong.Load(dir + "/opt.pt");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("another architecture"), std::string::npos) << st;
}

TEST(ClipGradNormTest, ScalesToMaxNorm) {
  torch::Tensor a = torch::zeros({1}).requires_grad_();
  torch::Tensor b = torch::zeros({1}).requires_grad_();
  a.mutable_grad() = torch::tensor({3.0f});
  b.mutable_grad() = torch::tensor({4.0f});
  EXPECT_NEAR(ClipGradNorm({a, b}, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(a.grad().item<float>(), 0.6f, 1e-5);
  EXPECT_NEAR(b.grad().item<float>(), 0.8f, 1e-5);
  EXPECT_NEAR(ClipGradNorm({a, b}, 0.0), 1.0, 1e-5);  // 0 = report only
  b.mutable_grad() = torch::tensor({NAN});
  EXPECT_TRUE(std::isnan(ClipGradNorm({a, b}, 1.0)));
}

TEST(TrainConfigTest, JsonRoundTripAndErrors) {
  TrainConfig c;
  c.lr = 3e-4;
  c.optimizer.kind = "lamb";
  c.steps = 77;
  auto back = TrainConfig::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), c.ToJson());
  auto unknown = TrainConfig::FromJson({{"learning_rate", 1.0}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("learning_rate"), std::string::npos);
  auto wrong_type = TrainConfig::FromJson({{"steps", "many"}});
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("steps"), std::string::npos);
  TrainConfig bad;
  bad.optimizer.kind = "sgd";
  EXPECT_NE(bad.Validate().message().find("--optimizer=sgd"), std::string::npos);
  bad = TrainConfig();
  bad.warmup_steps = bad.steps + 1;
  EXPECT_FALSE(bad.Validate().ok());
}

TEST(TrainConfigTest, AccumulationSteps) {
  TrainConfig c;
  c.global_batch = 64;
  c.micro_batch = 8;
  EXPECT_EQ(*AccumulationSteps(c, 2), 4);
  EXPECT_EQ(*AccumulationSteps(c, 1), 8);
  auto bad = AccumulationSteps(c, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--global_batch=64"), std::string::npos);
}

class EnvGuard {
 public:
  explicit EnvGuard(std::vector<std::string> names) : names_(std::move(names)) {
    for (const auto& n : names_) ::unsetenv(n.c_str());
  }
  ~EnvGuard() {
    for (const auto& n : names_) ::unsetenv(n.c_str());
  }

 private:
  std::vector<std::string> names_;
};

TEST(DistEnvTest, TorchrunSlurmAndSingle) {
  EnvGuard guard({"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
                  "SLURM_NTASKS", "SLURM_LOCALID"});
  auto single = DistEnvFromEnvironment();
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->world_size, 1);
  ::setenv("RANK", "3", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  ::setenv("LOCAL_RANK", "1", 1);
  ::setenv("MASTER_ADDR", "node7", 1);
  ::setenv("MASTER_PORT", "1234", 1);
  auto tr = DistEnvFromEnvironment();
  ASSERT_TRUE(tr.ok()) << tr.status();
  EXPECT_EQ(tr->rank, 3);
  EXPECT_EQ(tr->world_size, 4);
  EXPECT_EQ(tr->local_rank, 1);
  EXPECT_EQ(tr->master_addr, "node7");
  EXPECT_EQ(tr->master_port, 1234);
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  ::unsetenv("LOCAL_RANK");
  ::setenv("SLURM_PROCID", "5", 1);
  ::setenv("SLURM_NTASKS", "8", 1);
  ::setenv("SLURM_LOCALID", "1", 1);
  auto slurm = DistEnvFromEnvironment();
  ASSERT_TRUE(slurm.ok()) << slurm.status();
  EXPECT_EQ(slurm->rank, 5);
  EXPECT_EQ(slurm->world_size, 8);
  EXPECT_EQ(slurm->local_rank, 1);
  ::setenv("SLURM_PROCID", "9", 1);
  EXPECT_FALSE(DistEnvFromEnvironment().ok());
  ::setenv("SLURM_PROCID", "x", 1);
  auto bad = DistEnvFromEnvironment();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("SLURM_PROCID"), std::string::npos);
}

}  // namespace
}  // namespace gmlp::pretrain
