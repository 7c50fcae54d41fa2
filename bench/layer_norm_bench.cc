// The bf16 LayerNorm kernel (model/layer_norm_bf16.h) against what LayerNorm did before it on
// the CPU: cast the bf16 input to fp32, ATen's fp32 layer_norm, cast the output back to bf16
// for the next matmul (and the mirror casts of the gradients in backward). Forward + backward,
// interleaved over rounds, in one process; prints one JSON line per shape with the median
// time of each and their ratio. Shapes: the SGU's LayerNorm of gmlp-tiny and gmlp-small (32 x 128
// rows of d_ffn / 2) and a block LayerNorm at d_model. With gmlp's allocator setting, as the
// trainer runs (without it, fresh buffers page-fault and the casts' extra buffers cost more).
//
// Usage: layer_norm_bench [--threads=2] [--rounds=7] [--iters=30]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/process.h"
#include "model/layer_norm_bf16.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds per forward + backward of `ln` on a leaf bf16 input, averaged over `iters`.
template <typename F>
double TimeMs(F&& ln, const torch::Tensor& x, const torch::Tensor& dy, int iters) {
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    x.mutable_grad() = torch::Tensor();
    torch::Tensor y = ln(x);
    y.backward(dy);
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 7, iters = 30;
  for (int i = 1; i < argc; ++i) {
    if (std::sscanf(argv[i], "--threads=%d", &threads) == 1) continue;
    if (std::sscanf(argv[i], "--rounds=%d", &rounds) == 1) continue;
    if (std::sscanf(argv[i], "--iters=%d", &iters) == 1) continue;
    std::fprintf(stderr, "layer_norm_bench: unknown flag %s (--threads, --rounds, --iters)\n",
                 argv[i]);
    return 2;
  }
  gmlp::KeepFreedMemoryInProcess();  // as the trainer runs: no page faults on fresh buffers
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  struct Shape {
    const char* name;
    int64_t n, d;
  };
  const Shape shapes[] = {{"gmlp-tiny sgu_norm", 4096, 384},
                          {"gmlp-small sgu_norm", 4096, 768},
                          {"block norm d=128", 4096, 128}};
  for (const Shape& s : shapes) {
    const torch::Tensor x = torch::randn({s.n, s.d}).to(torch::kBFloat16).requires_grad_();
    const torch::Tensor dy = torch::randn({s.n, s.d}).to(torch::kBFloat16);
    const torch::Tensor w = (1 + 0.1 * torch::randn({s.d})).requires_grad_();
    const torch::Tensor b = (0.1 * torch::randn({s.d})).requires_grad_();
    auto kernel = [&](const torch::Tensor& in) {
      return gmlp::model::LayerNormBf16(in, w, b, 1e-5);
    };
    auto casts = [&](const torch::Tensor& in) {
      return torch::layer_norm(in.to(torch::kFloat32), {s.d}, w, b, 1e-5).to(torch::kBFloat16);
    };
    TimeMs(kernel, x, dy, 3);  // warm up both
    TimeMs(casts, x, dy, 3);
    std::vector<double> tk, tc, ratio;
    for (int r = 0; r < rounds; ++r) {
      const bool kernel_first = r % 2 == 0;
      const double a = kernel_first ? TimeMs(kernel, x, dy, iters) : TimeMs(casts, x, dy, iters);
      const double c = kernel_first ? TimeMs(casts, x, dy, iters) : TimeMs(kernel, x, dy, iters);
      tk.push_back(kernel_first ? a : c);
      tc.push_back(kernel_first ? c : a);
      ratio.push_back(tc.back() / tk.back());
    }
    std::printf(
        "{\"shape\":\"%s\",\"rows\":%lld,\"d\":%lld,\"threads\":%d,\"kernel_ms\":%.3f,"
        "\"casts_ms\":%.3f,\"speedup_median\":%.3f,\"speedup_min\":%.3f,\"speedup_max\":%.3f}\n",
        s.name, static_cast<long long>(s.n), static_cast<long long>(s.d), threads, Median(tk),
        Median(tc), Median(ratio), *std::min_element(ratio.begin(), ratio.end()),
        *std::max_element(ratio.begin(), ratio.end()));
  }
  return 0;
}
