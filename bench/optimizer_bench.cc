// The step after backward, clipping and AdamW, for a preset's real parameters: the multi-tensor
// CPU kernels (kernels/multi_tensor_cpu.h, under --kernels=auto) against ATen's per-tensor ops
// (what the trainer did before them), interleaved over rounds in one process. Gradients are random
// with a global norm above the clip threshold, so the scaling pass runs as it does early in
// pretraining. Prints one JSON line per preset with the median time of each and their ratio.
//
// Usage: optimizer_bench [--threads=2] [--rounds=7] [--iters=20] [--presets=gmlp-tiny,...]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "kernels/ops.h"
#include "model/config.h"
#include "model/heads.h"
#include "pretrain/grad_sync.h"
#include "pretrain/optimizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds per clip + AdamW step, averaged over `iters`; the gradients are restored before
// each step (outside the timing) since clipping scales them in place.
double TimeMs(gmlp::pretrain::Optimizer& opt, const std::vector<torch::Tensor>& params,
              const std::vector<torch::Tensor>& grads, bool multi_tensor, int iters) {
  double ms = 0;
  for (int i = 0; i < iters; ++i) {
    for (size_t k = 0; k < params.size(); ++k) params[k].mutable_grad().copy_(grads[k]);
    const gmlp::kernels::PolicyScope policy(multi_tensor ? gmlp::kernels::Policy::kAuto
                                                         : gmlp::kernels::Policy::kAten);
    const auto t0 = Clock::now();
    gmlp::pretrain::ClipGradNormAsync(params, 1.0);
    opt.Step(1e-4);
    ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  return ms / iters;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 7, iters = 20;
  char presets_flag[256] = "gmlp-tiny,amlp-tiny,transformer-tiny,gmlp-small";
  for (int i = 1; i < argc; ++i) {
    if (std::sscanf(argv[i], "--threads=%d", &threads) == 1) continue;
    if (std::sscanf(argv[i], "--rounds=%d", &rounds) == 1) continue;
    if (std::sscanf(argv[i], "--iters=%d", &iters) == 1) continue;
    if (std::sscanf(argv[i], "--presets=%255s", presets_flag) == 1) continue;
    std::fprintf(stderr,
                 "optimizer_bench: unknown flag %s (--threads, --rounds, --iters, --presets)\n",
                 argv[i]);
    return 2;
  }
  torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  for (const std::string& name : std::vector<std::string>(absl::StrSplit(presets_flag, ','))) {
    auto config = gmlp::model::Preset(name);
    if (!config.ok()) {
      std::fprintf(stderr, "optimizer_bench: %s\n", std::string(config.status().message()).c_str());
      return 1;
    }
    config->vocab_size = name.find("small") != std::string::npos ? 16384 : 8192;
    torch::manual_seed(0);
    gmlp::model::MlmModel mlm(*config);
    const std::vector<torch::Tensor> params = gmlp::pretrain::UniqueParameters(*mlm);
    std::vector<torch::Tensor> grads;
    int64_t numel = 0;
    for (const torch::Tensor& p : params) {
      grads.push_back(torch::randn_like(p) * 1e-2);
      p.mutable_grad() = torch::zeros_like(p);
      numel += p.numel();
    }
    gmlp::pretrain::OptimizerOptions multi, aten;
    gmlp::pretrain::Optimizer opt_multi(params, multi), opt_aten(params, aten);
    TimeMs(opt_multi, params, grads, true, 3);  // warm up both
    TimeMs(opt_aten, params, grads, false, 3);
    std::vector<double> tm, ta, ratio;
    for (int r = 0; r < rounds; ++r) {
      const bool multi_first = r % 2 == 0;
      const double a =
          TimeMs(multi_first ? opt_multi : opt_aten, params, grads, multi_first, iters);
      const double b =
          TimeMs(multi_first ? opt_aten : opt_multi, params, grads, !multi_first, iters);
      tm.push_back(multi_first ? a : b);
      ta.push_back(multi_first ? b : a);
      ratio.push_back(ta.back() / tm.back());
    }
    std::printf(
        "{\"preset\":\"%s\",\"tensors\":%zu,\"params\":%lld,\"threads\":%d,"
        "\"multi_tensor_ms\":%.3f,\"aten_ms\":%.3f,\"speedup_median\":%.3f,\"speedup_min\":%.3f,"
        "\"speedup_max\":%.3f}\n",
        name.c_str(), params.size(), static_cast<long long>(numel), threads, Median(tm), Median(ta),
        Median(ratio), *std::min_element(ratio.begin(), ratio.end()),
        *std::max_element(ratio.begin(), ratio.end()));
  }
  return 0;
}
