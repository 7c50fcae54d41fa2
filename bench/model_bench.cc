// Encoder throughput on this CPU: tokens/s of a forward+backward MLM step (B=32, n=128, 15%
// masked, head only on the masked rows) for every encoder at two presets, in fp32 and under
// bf16 CPU autocast, with MFU = tokens/s * TrainingFlopsPerToken / GEMM peak, the peak being
// torch::mm on 2048^2 matrices measured in the same run. Also: gMLP against a direct port of
// the PyTorch-eager formulation (batch-major, one U GEMM + chunk, einsum spatial projection,
// final LayerNorm on every row) built from the same weights in the same process, and a
// profile of where a gMLP step's time goes.
//
// With --kernels=auto,aten every encoder runs under both kernel policies (kernels/ops.h) in the
// same process, rounds interleaved, and the A/B lines give auto's speed-up over ATen's ops.
//
// Dropout is 0 throughout (so both gMLP formulations compute the same loss).
//
// Usage: model_bench [--presets=tiny,small] [--steps=4] [--rounds=2] [--threads=2]
//                    [--kernels=auto|aten|auto,aten]
#include <time.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/op_profile.h"
#include "common/process.h"
#include "kernels/autocast.h"
#include "kernels/ops.h"
#include "model/config.h"
#include "model/flops.h"
#include "model/heads.h"

namespace gmlp::model {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Process CPU seconds (all threads). On a machine shared with other jobs, work per CPU-second
// is far steadier than work per wall-second.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

struct Timing {
  double wall = 1e30;  // best seconds
  double cpu = 1e30;   // best CPU seconds
  void Keep(double w, double c) {
    wall = std::min(wall, w);
    cpu = std::min(cpu, c);
  }
};

// Best-of seconds (wall and CPU) of torch::mm on n x n matrices; GFLOP = 2 n^3 / 1e9.
Timing GemmTiming(torch::Dtype dtype, int64_t n = 2048) {
  const torch::Tensor a = torch::randn({n, n}).to(dtype), b = torch::randn({n, n}).to(dtype);
  torch::mm(a, b);
  Timing t;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = Clock::now();
    const double c0 = CpuSeconds();
    torch::Tensor c = torch::mm(a, b);
    t.Keep(Seconds(t0, Clock::now()), CpuSeconds() - c0);
  }
  return t;
}

struct Batch {
  EncoderInput input;
  torch::Tensor masked_M, targets_M;
};

Batch MakeBatch(const EncoderConfig& c, int64_t B, int64_t n) {
  torch::manual_seed(123);
  Batch batch;
  batch.input.input_ids = torch::randint(0, c.vocab_size, {B, n}, torch::kLong);
  batch.input.segment_ids = torch::zeros({B, n}, torch::kLong);
  const int64_t M = static_cast<int64_t>(0.15 * B * n);
  batch.masked_M = std::get<0>(torch::randperm(B * n, torch::kLong).narrow(0, 0, M).sort());
  batch.targets_M = torch::randint(0, c.vocab_size, {M}, torch::kLong);
  return batch;
}

// A step function: forward + loss + backward, returns the loss.
using StepFn = std::function<double(bool bf16)>;

// The pretrainer's step: forward under autocast, the MLM loss (mean over the masked rows) as the
// trainer computes it, backward.
double MlmStep(MlmModel& model, const Batch& batch, bool bf16) {
  model->zero_grad(/*set_to_none=*/false);  // 2.x defaults to true
  torch::Tensor logits;
  {
    kernels::AutocastScope autocast(bf16);
    logits = model->forward(batch.input, batch.masked_M);
  }
  const torch::Tensor loss =
      kernels::SumCrossEntropy(logits, batch.targets_M).loss / batch.targets_M.size(0);
  loss.backward();
  return loss.item<double>();
}

// The PyTorch-eager formulation of gMLP (as the public ports write it), sharing `model`'s
// weights: batch-major (B, n, d), U as one GEMM then chunk, LN(Z2), spatial projection by
// einsum, final LayerNorm on all rows before the gather.
double NaiveGmlpStep(MlmModel& model, const std::vector<torch::Tensor>& u_weights,
                     const std::vector<torch::Tensor>& u_biases, const Batch& batch, bool bf16) {
  model->zero_grad(/*set_to_none=*/false);  // 2.x defaults to true
  for (auto& w : u_weights) w.mutable_grad() = torch::Tensor();
  for (auto& b : u_biases) b.mutable_grad() = torch::Tensor();
  const EncoderConfig& c = model->encoder()->config();
  auto p = model->named_parameters();
  const double eps = c.layer_norm_eps;
  auto ln = [&](const torch::Tensor& x, const std::string& name) {
    torch::Tensor in = x.scalar_type() == torch::kBFloat16 ? x.to(torch::kFloat) : x;
    return torch::layer_norm(in, {in.size(-1)}, p[name + ".weight"], p[name + ".bias"], eps);
  };
  torch::Tensor loss;
  {
    kernels::AutocastScope autocast(bf16);
    const auto& ids = batch.input.input_ids;
    const int64_t B = ids.size(0), n = ids.size(1);
    torch::Tensor x =
        torch::embedding(p["encoder.embeddings.token.weight"], ids) +
        torch::embedding(p["encoder.embeddings.segment.weight"], batch.input.segment_ids);
    x = ln(x, "encoder.embeddings.norm");
    for (int64_t i = 0; i < c.n_layers; ++i) {
      const std::string pre = absl::StrFormat("encoder.blocks.%d.", i);
      const torch::Tensor h = ln(x, pre + "norm");
      const torch::Tensor z = torch::gelu(torch::linear(h, u_weights[i], u_biases[i]));
      auto halves = z.chunk(2, -1);
      const torch::Tensor v = ln(halves[1], pre + "sgu_norm");
      const torch::Tensor w = p[pre + "spatial_weight"].narrow(0, 0, n).narrow(1, 0, n);
      const torch::Tensor gate = torch::einsum("bnd,mn->bmd", {v, w}) +
                                 p[pre + "spatial_bias"].narrow(0, 0, n).view({1, n, 1});
      x = x + torch::linear(halves[0] * gate, p[pre + "out.weight"], p[pre + "out.bias"]);
    }
    x = ln(x, "encoder.final_norm");
    const torch::Tensor rows = x.reshape({B * n, -1}).index_select(0, batch.masked_M);
    torch::Tensor hm =
        torch::gelu(torch::linear(rows, p["mlm_head.dense.weight"], p["mlm_head.dense.bias"]));
    hm = ln(hm, "mlm_head.norm");
    const torch::Tensor logits =
        torch::linear(hm, p["encoder.embeddings.token.weight"], p["mlm_head.bias"]);
    loss = torch::cross_entropy_loss(logits.to(torch::kFloat), batch.targets_M);
  }
  loss.backward();
  return loss.item<double>();
}

// Wall and CPU seconds per step, averaged over `steps` steps after one warm-up step.
std::pair<double, double> TimeSteps(const StepFn& step, bool bf16, int steps) {
  step(bf16);
  const auto t0 = Clock::now();
  const double c0 = CpuSeconds();
  for (int i = 0; i < steps; ++i) step(bf16);
  return {Seconds(t0, Clock::now()) / steps, (CpuSeconds() - c0) / steps};
}

int Main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run cut short still shows its lines
  std::vector<std::string> sizes = {"tiny", "small"};
  std::vector<kernels::Policy> policies = {kernels::Policy::kAuto};
  int steps = 4, rounds = 2, threads = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> const char* {
      return arg.rfind(flag + "=", 0) == 0 ? arg.c_str() + flag.size() + 1 : nullptr;
    };
    if (const char* v = value("--presets")) {
      sizes = absl::StrSplit(v, ',', absl::SkipEmpty());
    } else if (const char* v = value("--steps")) {
      if (!absl::SimpleAtoi(v, &steps) || steps < 1)
        return std::fprintf(stderr, "bad --steps\n"), 1;
    } else if (const char* v = value("--rounds")) {
      if (!absl::SimpleAtoi(v, &rounds) || rounds < 1)
        return std::fprintf(stderr, "bad --rounds\n"), 1;
    } else if (const char* v = value("--threads")) {
      if (!absl::SimpleAtoi(v, &threads) || threads < 1)
        return std::fprintf(stderr, "bad --threads\n"), 1;
    } else if (const char* v = value("--kernels")) {
      policies.clear();
      for (const absl::string_view name : absl::StrSplit(v, ',')) {
        const auto policy = kernels::ParsePolicy(std::string_view(name.data(), name.size()));
        if (!policy) return std::fprintf(stderr, "bad --kernels: auto, aten or auto,aten\n"), 1;
        policies.push_back(*policy);
      }
    } else {
      std::fprintf(stderr,
                   "model_bench: unknown argument '%s'\nusage: model_bench "
                   "[--presets=tiny,small] [--steps=4] [--rounds=2] [--threads=2] "
                   "[--kernels=auto,aten]\n",
                   arg.c_str());
      return 1;
    }
  }
  KeepFreedMemoryInProcess();
  torch::set_num_threads(threads);
  const int64_t B = 32, n = 128;
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("threads %d, B %ld, n %ld, OPENBLAS_CORETYPE=%s\n", threads, B, n,
              coretype ? coretype : "(unset)");
  const double gemm_gflop = 2.0 * 2048 * 2048 * 2048 / 1e9;
  Timing gemm[2] = {GemmTiming(torch::kFloat), GemmTiming(torch::kBFloat16)};

  struct Row {
    std::string name;
    double flops_per_token;
    StepFn step;
    Timing best[2];
    double loss[2] = {0, 0};
  };
  std::vector<Row> rows;
  std::vector<MlmModel> keep_alive;
  std::vector<std::vector<torch::Tensor>> naive_params;
  std::map<std::string, Batch> batches;
  for (const std::string& size : sizes) {
    for (const char* arch : {"transformer", "gmlp", "amlp", "mixer"}) {
      const std::string name = std::string(arch) + "-" + size;
      auto config = Preset(name);
      if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 1;
      config->vocab_size = 8192;
      config->max_seq_len = n;
      // No dropout: the eager-style port must compute the same loss, and dropout's masks are
      // not what is being measured.
      config->dropout = 0.0;
      torch::manual_seed(1);
      MlmModel model(*config);
      model->train();
      keep_alive.push_back(model);
      batches[name] = MakeBatch(*config, B, n);
      const Batch* batch = &batches[name];
      const double fpt = TrainingFlopsPerToken(*config, n, 0.15);
      for (const kernels::Policy policy : policies) {
        // The row of the first policy is named as the encoder; A/B rows add the policy.
        const std::string row_name =
            policy == policies.front() ? name
                                       : absl::StrCat(name, " [", kernels::PolicyName(policy), "]");
        rows.push_back({row_name,
                        fpt,
                        [model, batch, policy](bool bf16) mutable {
                          const kernels::PolicyScope scope(policy);
                          return MlmStep(model, *batch, bf16);
                        },
                        {},
                        {}});
      }
      if (std::string(arch) == "gmlp") {
        // The eager formulation, on the same weights: U = [U1; U2] as one (f, d) parameter.
        std::vector<torch::Tensor> uw, ub;
        auto p = model->named_parameters();
        for (int64_t i = 0; i < config->n_layers; ++i) {
          const std::string pre = absl::StrFormat("encoder.blocks.%d.", i);
          uw.push_back(torch::cat({p[pre + "in_z1.weight"], p[pre + "in_z2.weight"]}, 0)
                           .detach()
                           .requires_grad_(true));
          ub.push_back(torch::cat({p[pre + "in_z1.bias"], p[pre + "in_z2.bias"]}, 0)
                           .detach()
                           .requires_grad_(true));
        }
        rows.push_back({name + " (eager-style port)",
                        fpt,
                        [model, uw, ub, batch](bool bf16) mutable {
                          return NaiveGmlpStep(model, uw, ub, *batch, bf16);
                        },
                        {},
                        {}});
      }
    }
  }
  // Interleaved rounds: the machine's speed drifts (other jobs), so take each row's best.
  for (int r = 0; r < rounds; ++r) {
    for (Row& row : rows) {
      for (int bf16 = 0; bf16 < 2; ++bf16) {
        const auto [wall, cpu] = TimeSteps(row.step, bf16, steps);
        row.best[bf16].Keep(wall, cpu);
        std::fprintf(stderr, "round %d %s %s: %.3f s/step (%.3f CPU-s)\n", r, row.name.c_str(),
                     bf16 ? "bf16" : "fp32", wall, cpu);
      }
    }
  }
  for (Row& row : rows) {
    row.loss[0] = row.step(false);
    row.loss[1] = row.step(true);
  }
  // The peak again at the end (the machine's load drifts); the best of both counts.
  for (int bf16 = 0; bf16 < 2; ++bf16) {
    const Timing again = GemmTiming(bf16 ? torch::kBFloat16 : torch::kFloat);
    gemm[bf16].Keep(again.wall, again.cpu);
  }
  const double peak[2] = {gemm_gflop / gemm[0].wall, gemm_gflop / gemm[1].wall};
  const double peak_cpu[2] = {gemm_gflop / gemm[0].cpu, gemm_gflop / gemm[1].cpu};
  std::printf(
      "GEMM peak (mm 2048^2): fp32 %.0f GFLOP/s (%.0f per CPU-s), bf16 %.0f GFLOP/s "
      "(%.0f per CPU-s)\n",
      peak[0], peak_cpu[0], peak[1], peak_cpu[1]);
  std::printf(
      "MFU = tokens/s x GFLOP/token / GEMM peak; cpu-MFU the same per CPU-second "
      "(steadier on a loaded machine).\n");
  std::printf(
      "\n| encoder | GFLOP/token | fp32 tokens/s | fp32 MFU | fp32 cpu-MFU | "
      "bf16 tokens/s | bf16 MFU | bf16 cpu-MFU | bf16/fp32 (per CPU-s) | loss fp32 | "
      "loss bf16 |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  const double tokens = static_cast<double>(B * n);
  for (const Row& row : rows) {
    double tps[2], mfu[2], cpu_mfu[2];
    for (int k = 0; k < 2; ++k) {
      tps[k] = tokens / row.best[k].wall;
      mfu[k] = tps[k] * row.flops_per_token / (peak[k] * 1e9);
      cpu_mfu[k] = tokens / row.best[k].cpu * row.flops_per_token / (peak_cpu[k] * 1e9);
    }
    std::printf("| %s | %.4f | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f | %.2fx | %.4f | %.4f |\n",
                row.name.c_str(), row.flops_per_token / 1e9, tps[0], mfu[0], cpu_mfu[0], tps[1],
                mfu[1], cpu_mfu[1], row.best[0].cpu / row.best[1].cpu, row.loss[0], row.loss[1]);
    const double rel = std::abs(row.loss[1] - row.loss[0]) / std::abs(row.loss[0]);
    if (rel > 0.02) {
      std::printf("WARNING: %s bf16 loss differs from fp32 by %.1f%%\n", row.name.c_str(),
                  100 * rel);
    }
  }
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    if (rows[i + 1].name != rows[i].name + " (eager-style port)") continue;
    std::printf(
        "%s: this library vs eager-style port, speed-up per wall-s (per CPU-s): "
        "fp32 %.2fx (%.2fx), bf16 %.2fx (%.2fx); fp32 loss diff %.2e\n",
        rows[i].name.c_str(), rows[i + 1].best[0].wall / rows[i].best[0].wall,
        rows[i + 1].best[0].cpu / rows[i].best[0].cpu,
        rows[i + 1].best[1].wall / rows[i].best[1].wall,
        rows[i + 1].best[1].cpu / rows[i].best[1].cpu,
        std::abs(rows[i].loss[0] - rows[i + 1].loss[0]));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = i + 1; j < rows.size() && policies.size() > 1; ++j) {
      if (rows[j].name != absl::StrCat(rows[i].name, " [", kernels::PolicyName(policies[1]), "]"))
        continue;
      std::printf(
          "A/B %s: --kernels=%s over --kernels=%s, speed-up per wall-s (per CPU-s): fp32 %.2fx "
          "(%.2fx), bf16 %.2fx (%.2fx); loss diff fp32 %.2e, bf16 %.2e\n",
          rows[i].name.c_str(), kernels::PolicyName(policies[0]), kernels::PolicyName(policies[1]),
          rows[j].best[0].wall / rows[i].best[0].wall, rows[j].best[0].cpu / rows[i].best[0].cpu,
          rows[j].best[1].wall / rows[i].best[1].wall, rows[j].best[1].cpu / rows[i].best[1].cpu,
          std::abs(rows[i].loss[0] - rows[j].loss[0]), std::abs(rows[i].loss[1] - rows[j].loss[1]));
    }
  }
  std::fflush(stdout);
  for (size_t i = 0; i < rows.size(); ++i) {
    // Profiles of the first size only (gMLP and its eager-style port), to bound the run time.
    if (rows[i].name.rfind("gmlp-" + sizes.front(), 0) != 0 ||
        rows[i].name.find('[') != std::string::npos) {
      continue;
    }
    bench::PrintOpProfile(rows[i].name + " fp32", bench::ProfileOps([&] { rows[i].step(false); }));
    bench::PrintOpProfile(rows[i].name + " bf16", bench::ProfileOps([&] { rows[i].step(true); }));
  }
  return 0;
}

}  // namespace
}  // namespace gmlp::model

int main(int argc, char** argv) { return gmlp::model::Main(argc, argv); }
