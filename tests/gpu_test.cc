// GPU tests: every build compiles them; they run where LibTorch sees a CUDA device and are
// skipped, with the reason, everywhere else. Each compares the GPU path with the CPU one that
// the rest of the suite checks in depth: encoder forward/backward (fp32 and bf16), a trainer step
// over NCCL, checkpoints crossing devices, autocast, and finetune + predict.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "finetune/encode.h"
#include "finetune/trainer.h"
#include "kernels/autocast.h"
#include "model/config.h"
#include "model/encoder.h"
#include "model/heads.h"
#include "pretrain/checkpoint.h"
#include "pretrain/dist.h"
#include "pretrain/trainer.h"
#include "tests/model_test_util.h"
#include "tests/pretrain_test_util.h"
#include "tokenizer/tokenizer.h"
#ifdef GMLP_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace gmlp {
namespace {

#ifdef GMLP_WITH_CUDA
constexpr char kNoGpu[] = "no CUDA device is visible to this CUDA build";
#else
constexpr char kNoGpu[] =
    "this build's LibTorch has no CUDA (build with `bash scripts/setup.sh --cuda`)";
#endif

#define GMLP_REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << kNoGpu

const torch::Device kCuda(torch::kCUDA, 0);

// ||a - b|| / ||b||, on the CPU in float64.
double RelError(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor x = a.detach().cpu().to(torch::kFloat64);
  const torch::Tensor y = b.detach().cpu().to(torch::kFloat64);
  return (x - y).norm().item<double>() / std::max(y.norm().item<double>(), 1e-30);
}

void CopyParameters(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto src = from.named_parameters(), dst = to.named_parameters();
  ASSERT_EQ(src.size(), dst.size());
  for (const auto& p : src) dst[p.key()].copy_(p.value());
}

// ---------------------------------------------------------------------------------------------
// Encoders: forward and backward on CUDA against CPU.

class GpuEncoderTest : public ::testing::TestWithParam<model::testing::NamedConfig> {};

struct Pass {
  torch::Tensor out;
  std::vector<torch::Tensor> grads;
};

Pass ForwardBackward(model::EncoderImpl& encoder, const model::EncoderInput& input,
                     torch::Device device, bool bf16) {
  model::EncoderInput in;
  in.input_ids = input.input_ids.to(device);
  in.segment_ids = input.segment_ids.to(device);
  in.pad_mask = input.pad_mask.to(device);
  encoder.zero_grad();
  Pass p;
  {
    kernels::AutocastScope autocast(bf16);
    p.out = encoder.forward(in).to(torch::kFloat32);
  }
  // A fixed random projection of the output, so every position and channel gets a gradient.
  torch::manual_seed(11);
  const torch::Tensor w = torch::randn(p.out.sizes()).to(device);
  (p.out * w).sum().backward();
  for (const auto& param : encoder.parameters()) {
    p.grads.push_back(param.grad().defined() ? param.grad().clone() : torch::zeros_like(param));
  }
  return p;
}

TEST_P(GpuEncoderTest, MatchesCpuInFp32AndBf16) {
  GMLP_REQUIRE_CUDA();
  const model::EncoderConfig& config = GetParam().config;
  torch::manual_seed(3);
  auto cpu = model::MakeEncoder(config);
  model::testing::Perturb(*cpu, 0.3, 5);
  auto gpu = model::MakeEncoder(config);
  CopyParameters(*cpu, *gpu);
  gpu->to(kCuda);
  const model::EncoderInput input = model::testing::RandomInput(config, 12, {12, 9, 4}, 17);

  for (const bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "fp32");
    const Pass c = ForwardBackward(*cpu, input, torch::kCPU, bf16);
    const Pass g = ForwardBackward(*gpu, input, kCuda, bf16);
    EXPECT_TRUE(g.out.is_cuda());
    // fp32: the same arithmetic in another order (1e-4). bf16: both sides round to bf16 at the
    // same places, the GPU's accumulation order and kernels differ (1e-2 of the norm).
    if (bf16) {
      EXPECT_LT(RelError(g.out, c.out), 1e-2);
    } else {
      EXPECT_TRUE(torch::allclose(g.out.cpu(), c.out, 1e-4, 1e-4))
          << "max diff " << (g.out.cpu() - c.out).abs().max().item<double>();
    }
    ASSERT_EQ(c.grads.size(), g.grads.size());
    for (size_t i = 0; i < c.grads.size(); ++i) {
      if (bf16) {
        EXPECT_LT(RelError(g.grads[i], c.grads[i]), 1e-2) << "parameter " << i;
      } else {
        EXPECT_TRUE(torch::allclose(g.grads[i].cpu(), c.grads[i], 1e-4, 1e-4))
            << "parameter " << i << " max diff "
            << (g.grads[i].cpu() - c.grads[i]).abs().max().item<double>();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Encoders, GpuEncoderTest,
                         ::testing::ValuesIn(model::testing::AllTinyConfigs()),
                         [](const auto& info) { return info.param.name; });

TEST(GpuAutocastTest, AutocastScopeRunsCudaMatmulsInBf16) {
  GMLP_REQUIRE_CUDA();
  const torch::Tensor a = torch::randn({64, 64}, torch::TensorOptions().device(kCuda));
  {
    kernels::AutocastScope autocast(true);
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat32);

  // The MLM model under autocast stays within bf16 rounding of its fp32 self.
  model::EncoderConfig config = *model::Preset("gmlp-tiny");
  config.dropout = 0.0;
  torch::manual_seed(4);
  model::MlmModel mlm(config);
  mlm->to(kCuda);
  mlm->eval();
  const model::EncoderInput cpu_in = model::testing::RandomInput(config, 32, {32, 32}, 9);
  model::EncoderInput in{cpu_in.input_ids.to(kCuda), cpu_in.segment_ids.to(kCuda),
                         cpu_in.pad_mask.to(kCuda)};
  const torch::Tensor index =
      torch::arange(0, 64, 3, torch::TensorOptions(torch::kLong).device(kCuda));
  torch::NoGradGuard no_grad;
  const torch::Tensor fp32 = mlm->forward(in, index);
  torch::Tensor bf16;
  {
    kernels::AutocastScope autocast(true);
    bf16 = mlm->forward(in, index).to(torch::kFloat32);
  }
  EXPECT_GT(RelError(bf16, fp32), 0.0) << "autocast changed nothing";
  EXPECT_LT(RelError(bf16, fp32), 2e-2);
}

// ---------------------------------------------------------------------------------------------
// The pretraining trainer on cuda:0 with an NCCL group (world size 1).

using pretrain::Dist;
using pretrain::testing::FakeLoader;
using pretrain::testing::TinyMlm;

constexpr int64_t kVocab = 40;

pretrain::TrainConfig SmallConfig(const std::string& out_dir) {
  pretrain::TrainConfig c;
  c.out_dir = out_dir;
  c.micro_batch = 4;
  c.global_batch = 8;  // two micro-batches: accumulation runs too
  c.steps = 4;
  c.lr = 5e-3;
  c.warmup_steps = 1;
  c.log_every = 1;
  c.eval_every = 0;
  c.checkpoint_every = 0;
  return c;
}

struct TrainRun {
  TinyMlm model{nullptr};
  std::unique_ptr<FakeLoader> loader;
  std::unique_ptr<Dist> dist;
  std::unique_ptr<pretrain::Trainer> trainer;
};

// A trainer of a TinyMlm with weights from seed 1 on `device`; NCCL there when it is a GPU.
TrainRun MakeRun(const pretrain::TrainConfig& config, torch::Device device) {
  TrainRun r;
  torch::manual_seed(1);
  r.model = TinyMlm(kVocab, 16, 0.0);
  r.model->to(device);
  r.loader = std::make_unique<FakeLoader>(kVocab, 10, config.micro_batch);
  if (device.is_cuda()) {
#ifdef GMLP_WITH_CUDA
    c10::cuda::set_device(0);
    r.dist = Dist::FromStore(Dist::MakeHashStore(), 0, 1, std::chrono::seconds(60),
                             Dist::Backend::kNccl);
#endif
  } else {
    r.dist = *Dist::Connect(pretrain::DistEnv{}, std::chrono::seconds(60));
  }
  pretrain::TrainerOptions o;
  o.config = config;
  o.quiet = true;
  r.trainer =
      std::make_unique<pretrain::Trainer>(o, r.model.ptr(), pretrain::testing::ForwardOf(r.model),
                                          r.loader.get(), nullptr, r.dist.get());
  return r;
}

void ExpectSameParameters(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b,
                          double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (tol == 0) {
      EXPECT_TRUE(torch::equal(a[i].cpu(), b[i].cpu())) << "parameter " << i;
    } else {
      EXPECT_TRUE(torch::allclose(a[i].cpu(), b[i].cpu(), tol, tol)) << "parameter " << i;
    }
  }
}

TEST(GpuTrainerTest, StepsOnCudaWithNcclMatchCpu) {
  GMLP_REQUIRE_CUDA();
  const std::string dir = pretrain::testing::FreshTempDir("gpu_step");
  TrainRun gpu = MakeRun(SmallConfig(dir + "/gpu"), kCuda);
  TrainRun cpu = MakeRun(SmallConfig(dir + "/cpu"), torch::kCPU);
  ASSERT_TRUE(gpu.trainer->Init().ok());
  ASSERT_TRUE(cpu.trainer->Init().ok());
  for (int s = 0; s < 3; ++s) {
    auto g = gpu.trainer->TrainStep();
    auto c = cpu.trainer->TrainStep();
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_NEAR(g->loss, c->loss, 1e-4 * c->loss) << "step " << s + 1;
    EXPECT_NEAR(g->grad_norm, c->grad_norm, 1e-4 * c->grad_norm) << "step " << s + 1;
    EXPECT_EQ(g->masked_tokens, c->masked_tokens);
  }
  EXPECT_TRUE(gpu.trainer->params().front().is_cuda());
  ExpectSameParameters(gpu.trainer->params(), cpu.trainer->params(), 1e-4);
  // Run() to the end: metrics and the final checkpoint written from GPU tensors.
  ASSERT_TRUE(gpu.trainer->Run().ok());
  EXPECT_EQ(pretrain::ListCheckpoints(dir + "/gpu/checkpoints").size(), 1u);
}

TEST(GpuTrainerTest, CheckpointCrossesFromGpuToCpuAndBack) {
  GMLP_REQUIRE_CUDA();
  const std::string dir = pretrain::testing::FreshTempDir("gpu_ckpt");
  TrainRun gpu = MakeRun(SmallConfig(dir + "/a"), kCuda);
  ASSERT_TRUE(gpu.trainer->Init().ok());
  ASSERT_TRUE(gpu.trainer->TrainStep().ok());
  ASSERT_TRUE(gpu.trainer->TrainStep().ok());
  ASSERT_TRUE(gpu.trainer->SaveCheckpoint().ok());

  // GPU -> CPU: the same weights and step, and the same next step as the GPU run takes.
  TrainRun cpu = MakeRun(SmallConfig(dir + "/b"), torch::kCPU);
  absl::Status init = cpu.trainer->Init(dir + "/a");
  ASSERT_TRUE(init.ok()) << init;
  EXPECT_EQ(cpu.trainer->step(), 2);
  ExpectSameParameters(cpu.trainer->params(), gpu.trainer->params(), 0);
  auto g3 = gpu.trainer->TrainStep();
  auto c3 = cpu.trainer->TrainStep();
  ASSERT_TRUE(g3.ok() && c3.ok());
  EXPECT_NEAR(g3->loss, c3->loss, 1e-4 * c3->loss);
  ASSERT_TRUE(cpu.trainer->SaveCheckpoint().ok());

  // CPU -> GPU.
  TrainRun back = MakeRun(SmallConfig(dir + "/c"), kCuda);
  init = back.trainer->Init(dir + "/b");
  ASSERT_TRUE(init.ok()) << init;
  EXPECT_EQ(back.trainer->step(), 3);
  EXPECT_TRUE(back.trainer->params().front().is_cuda());
  ExpectSameParameters(back.trainer->params(), cpu.trainer->params(), 0);
}

// ---------------------------------------------------------------------------------------------
// Finetuning and prediction on CUDA.

// Single-sentence task: label 1 iff word id 5 occurs in the sentence.
std::vector<finetune::EncodedExample> ContainsWord(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> word(tokenizer::kNumSpecialIds + 1,
                                              tokenizer::kNumSpecialIds + 11);
  std::vector<finetune::EncodedExample> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> a(6);
    for (int32_t& x : a) x = word(rng);
    if (i % 2) a[rng() % 6] = tokenizer::kNumSpecialIds;
    finetune::EncodedExample e = finetune::PackExample(a, {}, /*pair=*/false, 16);
    e.label = i % 2;
    out.push_back(std::move(e));
  }
  return out;
}

TEST(GpuFinetuneTest, FinetunesAndPredictsOnCuda) {
  GMLP_REQUIRE_CUDA();
  finetune::TaskSpec task;
  task.name = "contains-word";
  task.labels = {"no", "yes"};
  task.metrics = {"accuracy"};
  task.train.name = "train";
  task.train.file = "-";
  task.train.sentence1 = "a";
  task.train.label = "l";
  finetune::SplitSpec dev = task.train;
  dev.name = "dev";
  task.eval = {dev};
  ASSERT_TRUE(task.Validate().ok()) << task.Validate();

  model::EncoderConfig config = *model::Preset("gmlp-tiny");
  config.vocab_size = 32;
  config.max_seq_len = 16;
  config.n_layers = 2;
  config.dropout = 0.0;
  finetune::FinetuneOptions options;
  options.lr = 1e-3;
  options.batch_size = 16;
  options.epochs = 4;
  options.max_len = 16;
  options.quiet = true;
  const auto dev_examples = ContainsWord(200, 2);
  auto run = finetune::FinetuneSeed(
      task,
      [config]() -> absl::StatusOr<std::shared_ptr<model::EncoderImpl>> {
        return model::MakeEncoder(config);
      },
      ContainsWord(400, 1), {{"dev", dev_examples}}, {}, options, /*seed=*/1);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->classifier->parameters().front().is_cuda());
  EXPECT_GE(run->result.best.at("dev").at("accuracy"), 0.9);

  // Predictions on the GPU equal those of the same weights on the CPU.
  const finetune::SplitPredictions on_gpu =
      finetune::Predict(run->classifier, /*regression=*/false, dev_examples, 64);
  run->classifier->to(torch::kCPU);
  const finetune::SplitPredictions on_cpu =
      finetune::Predict(run->classifier, /*regression=*/false, dev_examples, 64);
  EXPECT_EQ(on_gpu.label, on_cpu.label);
}

}  // namespace
}  // namespace gmlp
