// Training-step throughput of the pretrainer: tokens/s and MFU (against a GEMM peak measured in
// this process) of Trainer::TrainStep on model::MlmModel with a fixed synthetic batch, so only
// compute and communication are timed. Prints one JSON line (rank 0), which
// bench/pretrain_bench.sh sets beside PyTorch eager (bench/pretrain_reference.py) in one run.
//
//   pretrain_bench --preset=gmlp-tiny [--vocab=8192] [--seq_len=128] [--batch=32] [--steps=20]
//                  [--threads=2] [--bf16] [--dropout=P] [--bucket_mb=MB] [--config_out=FILE]
//                  [--profile] [--keep_freed_memory=false]
// Under RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT it runs data-parallel (weak scaling: --batch
// is per rank).
#include <torch/torch.h>

#include <chrono>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/op_profile.h"
#include "common/file_util.h"
#include "common/process.h"
#include "kernels/ops.h"
#include "model/config.h"
#include "model/flops.h"
#include "model/heads.h"
#include "pretrain/checkpoint.h"
#include "pretrain/dist.h"
#include "pretrain/metrics.h"
#include "pretrain/run.h"
#include "pretrain/synthetic_loader.h"
#include "pretrain/trainer.h"

ABSL_FLAG(std::string, kernels, "auto",
          "kernels/ops.h's policy: auto (gmlp's CPU kernels where they apply) | aten (ATen's ops "
          "everywhere).");
ABSL_FLAG(std::string, preset, "gmlp-tiny", "Encoder preset.");
ABSL_FLAG(int64_t, vocab, 8192, "Vocabulary size.");
ABSL_FLAG(int64_t, seq_len, 128, "Sequence length.");
ABSL_FLAG(double, dropout, -1, "Dropout override (default: the preset's).");
ABSL_FLAG(int64_t, batch, 32, "Sequences per rank per step.");
ABSL_FLAG(int, steps, 20, "Timed steps.");
ABSL_FLAG(int, warmup, 3, "Untimed steps first.");
ABSL_FLAG(int, threads, 2, "Intra-op threads.");
ABSL_FLAG(bool, bf16, false, "bf16 autocast.");
ABSL_FLAG(double, bucket_mb, -1, "Gradient allreduce bucket size (MB; default: the trainer's).");
ABSL_FLAG(std::string, config_out, "", "Write the resolved EncoderConfig JSON here.");
ABSL_FLAG(bool, profile, false,
          "After the JSON line, print a per-op profile of one training step (LibTorch's legacy "
          "profiler, whose memory-bound op times swing 2-5x between runs: use perf for where the "
          "time goes, see bench/RESULTS.md).");
ABSL_FLAG(bool, keep_freed_memory, true,
          "Apply gmlp's allocator setting (KeepFreedMemoryInProcess), as `gmlp pretrain` does; "
          "false shows glibc's default behaviour.");

namespace gmlp::pretrain {
namespace {

int Main() {
  if (absl::GetFlag(FLAGS_keep_freed_memory)) KeepFreedMemoryInProcess();
  torch::set_num_threads(absl::GetFlag(FLAGS_threads));
  auto env = DistEnvFromEnvironment();
  if (!env.ok()) {
    std::fprintf(stderr, "pretrain_bench: %s\n", std::string(env.status().message()).c_str());
    return 1;
  }
  auto config = model::Preset(absl::GetFlag(FLAGS_preset));
  if (!config.ok()) {
    std::fprintf(stderr, "pretrain_bench: %s\n", std::string(config.status().message()).c_str());
    return 1;
  }
  config->vocab_size = absl::GetFlag(FLAGS_vocab);
  config->max_seq_len = absl::GetFlag(FLAGS_seq_len);
  if (absl::GetFlag(FLAGS_dropout) >= 0) config->dropout = absl::GetFlag(FLAGS_dropout);
  if (!absl::GetFlag(FLAGS_config_out).empty()) {
    (void)WriteFileAtomic(absl::GetFlag(FLAGS_config_out), config->ToJson().dump(2));
  }
  auto dist = Dist::Connect(*env, std::chrono::seconds(60));
  if (!dist.ok()) {
    std::fprintf(stderr, "pretrain_bench: %s\n", std::string(dist.status().message()).c_str());
    return 1;
  }
  const int64_t batch = absl::GetFlag(FLAGS_batch);
  torch::manual_seed(1);
  model::MlmModel mlm(*config);
  const torch::Device device = TrainingDevice(*env);  // a GPU per rank on a CUDA build
  mlm->to(device);
  // The same masked batch forever: the benchmark times the step, not the data.
  SyntheticMlmLoader loader(config->vocab_size, config->max_seq_len, batch, 100 + env->rank);
  TrainerOptions o;
  o.config.out_dir = "/tmp/gmlp_pretrain_bench_unused";
  o.config.micro_batch = batch;
  o.config.global_batch = batch * env->world_size;
  o.config.steps = 1 << 30;
  o.config.lr = 1e-4;
  o.config.warmup_steps = 0;
  o.config.bf16 = absl::GetFlag(FLAGS_bf16);
  if (absl::GetFlag(FLAGS_bucket_mb) > 0) o.config.bucket_mb = absl::GetFlag(FLAGS_bucket_mb);
  o.quiet = true;
  o.config.kernels = absl::GetFlag(FLAGS_kernels);
  const auto policy = kernels::ParsePolicy(o.config.kernels);
  if (!policy) {
    std::fprintf(stderr, "pretrain_bench: --kernels=%s is not one of auto, aten\n",
                 o.config.kernels.c_str());
    return 2;
  }
  kernels::SetPolicy(*policy);
  Trainer trainer(
      o, mlm.ptr(),
      [mlm](const model::EncoderInput& in, const torch::Tensor& idx) mutable {
        return mlm->forward(in, idx);
      },
      &loader, nullptr, dist->get());
  // Init refuses an out_dir with checkpoints; this one never gets any.
  absl::Status st = trainer.Init();
  if (!st.ok()) {
    std::fprintf(stderr, "pretrain_bench: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  for (int i = 0; i < absl::GetFlag(FLAGS_warmup); ++i) (void)trainer.TrainStep();
  const int steps = absl::GetFlag(FLAGS_steps);
  double loss = 0;
  const auto start = std::chrono::steady_clock::now();
  // As `gmlp pretrain` between log lines: only the last step waits for the device.
  for (int i = 0; i < steps; ++i) {
    auto s = trainer.TrainStep(/*sync=*/i == steps - 1);
    if (!s.ok()) {
      std::fprintf(stderr, "pretrain_bench: %s\n", std::string(s.status().message()).c_str());
      return 1;
    }
    loss = s->loss;
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double peak = MeasureGemmPeakGflops(o.config.bf16, 0.5, device);
  const double tokens_per_s =
      static_cast<double>(batch * config->max_seq_len * env->world_size) * steps / elapsed;
  const double flops = model::TrainingFlopsPerToken(*config, config->max_seq_len, 0.15);
  if (env->rank == 0) {
    nlohmann::json r = {{"impl", "libtorch"},
                        {"preset", absl::GetFlag(FLAGS_preset)},
                        {"arch", config->arch},
                        {"device", device.str()},
                        {"bf16", o.config.bf16},
                        {"world_size", env->world_size},
                        {"threads", absl::GetFlag(FLAGS_threads)},
                        {"keep_freed_memory", absl::GetFlag(FLAGS_keep_freed_memory)},
                        {"kernels", o.config.kernels},
                        {"batch_per_rank", batch},
                        {"tokens_per_s", tokens_per_s},
                        {"step_ms", 1000 * elapsed / steps},
                        {"flops_per_token", flops},
                        {"peak_gflops", peak},
                        {"mfu", flops * tokens_per_s / (peak * 1e9 * env->world_size)},
                        {"overlapped_buckets", trainer.grad_sync().overlapped_buckets()},
                        {"buckets", trainer.grad_sync().num_buckets()},
                        {"loss", loss}};
    std::printf("%s\n", r.dump().c_str());
  }
  if (absl::GetFlag(FLAGS_profile)) {
    // A few steps first: the peak measurement above reshaped the heap, and the steps right
    // after it page-fault in fresh memory that a steady-state step does not touch.
    for (int i = 0; i < 3; ++i) (void)trainer.TrainStep();
    const auto ops = bench::ProfileOps([&] { (void)trainer.TrainStep(); });
    if (env->rank == 0) {
      bench::PrintOpProfile(absl::GetFlag(FLAGS_preset) + (o.config.bf16 ? " bf16" : " fp32") +
                                " training step (forward, backward, clipping, optimizer)",
                            ops, 30);
    }
  }
  return 0;
}

}  // namespace
}  // namespace gmlp::pretrain

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gmlp::pretrain::Main();
}
