// Data parallelism on Gloo with ranks as threads of this process (one c10d::HashStore): the
// collectives, the bucketed gradient sum, and 2 ranks x b == 1 rank x 2b for whole steps.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <thread>
#include <vector>

#include "pretrain/dist.h"
#include "pretrain/grad_sync.h"
#include "pretrain/trainer.h"
#include "tests/pretrain_test_util.h"

namespace gmlp::pretrain {
namespace {

using testing::FakeLoader;
using testing::TinyMlm;

// Runs body(rank, dist) on `world` threads sharing one store; rethrows nothing, so bodies use
// EXPECT_*.
void RunRanks(int world, const std::function<void(int, Dist*)>& body) {
  auto store = Dist::MakeHashStore();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r]() {
      auto dist = Dist::FromStore(store, r, world, std::chrono::seconds(30));
      body(r, dist.get());
    });
  }
  for (auto& t : threads) t.join();
}

TEST(DistTest, AllreduceAndBroadcast) {
  RunRanks(2, [](int rank, Dist* dist) {
    EXPECT_EQ(dist->world_size(), 2);
    torch::Tensor t = torch::full({3}, static_cast<float>(rank + 1));
    dist->AllreduceSum(t);
    EXPECT_TRUE(torch::equal(t, torch::full({3}, 3.0f)));
    std::vector<torch::Tensor> b{torch::full({2}, static_cast<float>(10 * rank + 5))};
    dist->Broadcast(b, 0);
    EXPECT_TRUE(torch::equal(b[0], torch::full({2}, 5.0f)));
    dist->Barrier();
  });
}

TEST(GradSyncTest, UniqueParametersCountsATiedWeightOnce) {
  TinyMlm m(50, 8, 0.0);
  int64_t all = 0;
  for (const auto& p : m->parameters()) (void)p, ++all;
  const auto unique = UniqueParameters(*m);
  EXPECT_EQ(static_cast<int64_t>(unique.size()), all - 1);
}

// Each rank backpropagates a different batch; after Finish every rank holds the SUM of both
// ranks' gradients, which a single process computes here as the reference. Small buckets make
// several of them, and the tied embedding/decoder weight (two uses) is reduced once.
TEST(GradSyncTest, SumsGradientsOverRanksWhileBackwardRuns) {
  torch::manual_seed(11);
  TinyMlm reference(50, 16, 0.0);
  std::vector<torch::Tensor> ref_grads;
  {
    for (int r = 0; r < 2; ++r) {
      FakeLoader loader(50, 12, 4, r, 2);
      auto batch = *loader.Next();
      MlmTensors t = ToTensors(batch);
      reference->forward(t.input, t.masked_index).sum().backward();
    }
    for (const auto& p : UniqueParameters(*reference)) ref_grads.push_back(p.grad().clone());
  }
  RunRanks(2, [&](int rank, Dist* dist) {
    TinyMlm m(50, 16, 0.0);
    {
      torch::NoGradGuard no_grad;
      auto src = UniqueParameters(*reference);
      auto dst = UniqueParameters(*m);
      for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
    }
    auto params = UniqueParameters(*m);
    GradSync sync(params, dist, /*bucket_mb=*/0.001);  // ~1 KB buckets
    EXPECT_GT(sync.num_buckets(), 2);
    FakeLoader loader(50, 12, 4, rank, 2);
    // Two accumulation micro-steps: the first is not communicated, the second adds it.
    auto b1 = *loader.Next();
    MlmTensors t1 = ToTensors(b1);
    (0.5 * m->forward(t1.input, t1.masked_index).sum()).backward();
    ASSERT_TRUE(loader.Restore({}).ok());
    auto b2 = *loader.Next();
    MlmTensors t2 = ToTensors(b2);
    sync.PrepareFinalBackward();
    (0.5 * m->forward(t2.input, t2.masked_index).sum()).backward();
    sync.Finish();
    EXPECT_GT(sync.overlapped_buckets(), 0);
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(torch::allclose(params[i].grad(), ref_grads[i], 1e-5, 1e-6))
          << "param " << i << " rank " << rank;
    }
  });
}

TrainConfig SmallConfig(const std::string& out_dir, int64_t micro, int64_t global) {
  TrainConfig c;
  c.out_dir = out_dir;
  c.micro_batch = micro;
  c.global_batch = global;
  c.steps = 10;
  c.lr = 1e-2;
  c.warmup_steps = 2;
  c.log_every = 1;
  c.checkpoint_every = 0;
  return c;
}

// k optimizer steps with 2 ranks x b sequences end at the same parameters as 1 rank x 2b.
TEST(DataParallelTest, TwoRanksMatchOneRankWithTwiceTheBatch) {
  constexpr int kSteps = 4;
  const std::string dir = testing::FreshTempDir("dp");
  torch::manual_seed(5);
  TinyMlm init(40, 16, 0.0);
  auto copy_init = [&](TinyMlm& m) {
    torch::NoGradGuard no_grad;
    auto src = UniqueParameters(*init);
    auto dst = UniqueParameters(*m);
    for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
  };
  std::vector<torch::Tensor> single_params;
  std::vector<double> single_losses;
  {
    TinyMlm m(40, 16, 0.0);
    copy_init(m);
    FakeLoader loader(40, 10, 8);
    auto dist = Dist::Connect(DistEnv{}, std::chrono::seconds(5));
    TrainerOptions o;
    o.config = SmallConfig(dir + "/one", 8, 8);
    o.quiet = true;
    Trainer trainer(o, m.ptr(), testing::ForwardOf(m), &loader, nullptr, dist->get());
    ASSERT_TRUE(trainer.Init().ok());
    for (int s = 0; s < kSteps; ++s) single_losses.push_back(trainer.TrainStep()->loss);
    for (const auto& p : trainer.params()) single_params.push_back(p.detach().clone());
  }
  RunRanks(2, [&](int rank, Dist* dist) {
    TinyMlm m(40, 16, 0.0);
    if (rank == 0) copy_init(m);  // rank 1 starts elsewhere: the broadcast must fix it
    FakeLoader loader(40, 10, 4, rank, 2);
    TrainerOptions o;
    o.config = SmallConfig(dir + "/two", 4, 8);
    o.config.bucket_mb = 0.002;
    o.quiet = true;
    Trainer trainer(o, m.ptr(), testing::ForwardOf(m), &loader, nullptr, dist);
    ASSERT_TRUE(trainer.Init().ok());
    for (int s = 0; s < kSteps; ++s) {
      auto stats = trainer.TrainStep();
      ASSERT_TRUE(stats.ok());
      EXPECT_NEAR(stats->loss, single_losses[s], 1e-5) << "step " << s;
    }
    for (size_t i = 0; i < single_params.size(); ++i) {
      EXPECT_TRUE(torch::allclose(trainer.params()[i], single_params[i], 1e-5, 1e-6))
          << "param " << i << " rank " << rank << " max diff "
          << (trainer.params()[i] - single_params[i]).abs().max().item<float>();
    }
  });
}

}  // namespace
}  // namespace gmlp::pretrain
