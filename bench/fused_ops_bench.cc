// gmlp's fused CPU kernels against the ATen ops they replace, forward + backward, at the
// shapes a gmlp-tiny / gmlp-small training step runs them (32 x 128 rows):
//
//   layer_norm   kernels::cpu::LayerNormBf16 vs the casts it replaced: bf16 -> fp32, ATen's
//                layer_norm, fp32 -> bf16 for the next matmul (the SGU's LayerNorm at d_ffn / 2,
//                and a LayerNorm at d_model)
//   layer_norm_f32_in  the same kernel on an fp32 input (a pre-LN block's LayerNorm), bf16 out,
//                vs ATen's fp32 layer_norm and a cast to bf16
//   gelu         kernels::cpu::BiasGelu vs what autocast ran: bf16 bias + gelu (d_ffn / 2 wide, as
//                gMLP's Z2 half; d_model, as the MLM head)
//   gelu_gate    kernels::cpu::BiasGeluGate vs gelu(y + bias) * gate (gMLP's Z1 half and gating)
//   gelu_f32, gelu_gate_f32  the same kernels on float32 activations without a bias, as the
//                float32 step runs them (the bias stays in addmm), vs gelu(y) [* gate]
//   linear_gelu_gate_f32[_bias_in_kernel]  gMLP-tiny's U1 matmul with GELU and the gate in
//                float32: gemm.h's Linear with the bias + the kernel (as layers.cc runs it), or
//                without it + the kernel adding the bias, vs ATen's linear, gelu and product
//   gelu_layer_norm_f32  kernels::cpu::BiasGeluLayerNorm in float32 without a bias (gMLP's Z2 and
//   the
//                SGU's LayerNorm as the float32 step runs them) vs layer_norm(gelu(y))
//   add_layer_norm  kernels::cpu::AddLayerNorm (a pre-LN block's residual add and LayerNorm in one
//                pass) vs ATen's add and kernels::cpu::LayerNormBf16 on the sum
//   add_layer_norm_f32  the same in float32 (delta and the output too) vs ATen's add and
//                layer_norm
//   attention    kernels::cpu::TinyAttentionBf16 vs the ATen composition it replaced under CPU bf16
//                autocast (aMLP's tiny attention, one 64-wide head over 128 positions, a quarter
//                of the keys padded in half the sequences)
//   attention_heads  kernels::cpu::AttentionBf16 as transformer-tiny runs it in training (2 heads
//   of 64,
//                ALiBi, the same padding, dropout 0.1 on the probabilities) vs its ATen composition
//   linear_f32, spatial_f32, attention_f32  model/gemm.h's float32 products (Linear at the U, V
//                and MLM-logit shapes, AddMm as the spatial projection, BatchedMm as attention's
//                scores), accumulated into zeroed outputs, vs ATen's linear, addmm and matmul
//
// Each case alternates kernel and reference over rounds in one process and prints one JSON line
// with the median milliseconds of each and their ratio, plus `copy_ms`: the time of copying the
// case's bytes (inputs read, outputs written, forward and backward) once, the memory-bound floor.
// With gmlp's allocator setting, as the trainer runs (fresh buffers would page-fault).
//
// Usage: fused_ops_bench [--threads=2] [--rounds=7] [--iters=30]
//                        [--ops=layer_norm,gelu,gelu_gate,gelu_f32,gelu_gate_f32,
//                         linear_gelu_gate_f32,linear_gelu_gate_f32_bias_in_kernel,
//                         gelu_layer_norm_f32,layer_norm_f32_in,add_layer_norm,
//                         add_layer_norm_f32,attention,attention_heads,linear_f32,spatial_f32,
//                         attention_f32]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "common/process.h"
#include "kernels/attention_bf16.h"
#include "kernels/autocast.h"
#include "kernels/dropout.h"
#include "kernels/gelu_cpu.h"
#include "kernels/gemm.h"
#include "kernels/layer_norm_cpu.h"

namespace {

using Clock = std::chrono::steady_clock;
using Leaves = std::vector<torch::Tensor>;
using Outputs = std::vector<torch::Tensor>;
using Op = std::function<Outputs(const Leaves&)>;

// An Op of a one-output function.
template <typename F>
Op One(F f) {
  return [f](const Leaves& l) { return Outputs{f(l)}; };
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds per forward + backward of `op` on `leaves` (with `grads` for its outputs),
// averaged over `iters`.
double TimeMs(const Op& op, const Leaves& leaves, const Outputs& grads, int iters) {
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    for (const torch::Tensor& t : leaves) t.mutable_grad() = torch::Tensor();
    torch::autograd::backward(op(leaves), grads);
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters;
}

// Milliseconds to copy `bytes` (read and write), averaged over `iters`: a memory-bound floor.
double CopyMs(int64_t bytes, int iters) {
  const torch::Tensor src = torch::ones({bytes / 4}, torch::kBFloat16);  // bytes / 2 each way
  torch::Tensor dst = torch::empty_like(src);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) dst.copy_(src);
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters;
}

struct Case {
  std::string op, shape;
  int64_t rows, d;
  Leaves leaves;
  Op kernel, reference;
  int64_t bytes;  // read + written by the kernel, forward and backward, counted once each
};

torch::Tensor Bf16Leaf(int64_t rows, int64_t d, double scale, double shift) {
  return (torch::randn({rows, d}) * scale + shift).to(torch::kBFloat16).requires_grad_();
}

torch::Tensor FloatLeaf(int64_t d, double scale, double shift) {
  return (torch::randn({d}) * scale + shift).requires_grad_();
}

std::vector<Case> Cases() {
  using gmlp::kernels::cpu::BiasGelu;
  using gmlp::kernels::cpu::BiasGeluGate;
  using gmlp::kernels::cpu::LayerNormBf16;
  std::vector<Case> cases;
  const int64_t N = 32 * 128;
  for (const auto& [shape, d] :
       std::vector<std::pair<const char*, int64_t>>{{"gmlp-tiny sgu (d_ffn/2 = 384)", 384},
                                                    {"gmlp-small sgu (d_ffn/2 = 768)", 768},
                                                    {"d_model = 128", 128}}) {
    const int64_t act = N * d * 2;  // one bf16 activation
    cases.push_back(
        {"layer_norm",
         shape,
         N,
         d,
         {Bf16Leaf(N, d, 1, 0), FloatLeaf(d, 0.1, 1), FloatLeaf(d, 0.1, 0)},
         One([d = d](const Leaves& l) { return LayerNormBf16(l[0], l[1], l[2], 1e-5); }),
         One([d = d](const Leaves& l) {
           return torch::layer_norm(l[0].to(torch::kFloat32), {d}, l[1], l[2], 1e-5)
               .to(torch::kBFloat16);
         }),
         2 * act + 3 * act});  // x in, y out; x, dy in, dx out
    cases.push_back(
        {"gelu",
         shape,
         N,
         d,
         {Bf16Leaf(N, d, 1, 0), FloatLeaf(d, 0.1, 0)},
         One([](const Leaves& l) { return BiasGelu(l[0], l[1]); }),
         One([](const Leaves& l) { return torch::gelu(l[0] + l[1].to(torch::kBFloat16)); }),
         2 * act + 3 * act});
    cases.push_back(
        {"gelu_gate",
         shape,
         N,
         d,
         {Bf16Leaf(N, d, 1, 0), FloatLeaf(d, 0.1, 0), Bf16Leaf(N, d, 0.1, 1)},
         One([](const Leaves& l) { return BiasGeluGate(l[0], l[1], l[2]); }),
         One([](const Leaves& l) { return torch::gelu(l[0] + l[1].to(torch::kBFloat16)) * l[2]; }),
         3 * act + 5 * act});  // y, gate in, out; y, gate, dout in, dy, dgate out
    // The float32 step's GELU and gate: the bias stays in addmm, the kernel runs without one.
    const torch::Tensor y32 = torch::randn({N, d});
    const torch::Tensor gate32 = torch::randn({N, d}) * 0.1 + 1;
    cases.push_back({"gelu_f32",
                     shape,
                     N,
                     d,
                     {y32.clone().requires_grad_()},
                     One([](const Leaves& l) { return BiasGelu(l[0], {}); }),
                     One([](const Leaves& l) { return torch::gelu(l[0]); }),
                     2 * (2 * act + 3 * act)});  // float32: twice the bf16 bytes
    cases.push_back({"gelu_gate_f32",
                     shape,
                     N,
                     d,
                     {y32.clone().requires_grad_(), gate32.clone().requires_grad_()},
                     One([](const Leaves& l) { return BiasGeluGate(l[0], {}, l[1]); }),
                     One([](const Leaves& l) { return torch::gelu(l[0]) * l[1]; }),
                     2 * (3 * act + 5 * act)});
    // The float32 step's GELU and SGU LayerNorm (gMLP's Z2), the bias in addmm.
    cases.push_back({"gelu_layer_norm_f32",
                     shape,
                     N,
                     d,
                     {y32.clone().requires_grad_(), FloatLeaf(d, 0.1, 1), FloatLeaf(d, 0.1, 0)},
                     One([](const Leaves& l) {
                       return gmlp::kernels::cpu::BiasGeluLayerNorm(l[0], {}, l[1], l[2], 1e-5);
                     }),
                     One([d = d](const Leaves& l) {
                       return torch::layer_norm(torch::gelu(l[0]), {d}, l[1], l[2], 1e-5);
                     }),
                     2 * (2 * act + 3 * act)});  // y in, out; y, dout in, dy out
  }
  // Where the float32 step's bias goes: gMLP-tiny's U1 (128 -> 384) with GELU and the gate,
  // forward and backward, as layers.cc runs it (gemm.h's Linear with the bias, the kernel
  // without) and with the bias moved into the kernel (Linear without it, as under bf16 autocast);
  // both against ATen's linear, gelu and product.
  for (const bool bias_in_gemm : {true, false}) {
    const int64_t d_in = 128, f = 384;
    cases.push_back(
        {bias_in_gemm ? "linear_gelu_gate_f32" : "linear_gelu_gate_f32_bias_in_kernel",
         "gmlp-tiny U1 (128 -> 384)",
         N,
         f,
         {torch::randn({N, d_in}).requires_grad_(),
          (torch::randn({f, d_in}) * 0.05).requires_grad_(), FloatLeaf(f, 0.1, 0),
          (torch::randn({N, f}) * 0.1 + 1).requires_grad_()},
         One([bias_in_gemm](const Leaves& l) {
           return bias_in_gemm
                      ? BiasGeluGate(gmlp::kernels::cpu::Linear(l[0], l[1], l[2]), {}, l[3])
                      : BiasGeluGate(gmlp::kernels::cpu::Linear(l[0], l[1]), l[2], l[3]);
         }),
         One([](const Leaves& l) { return torch::gelu(torch::linear(l[0], l[1], l[2])) * l[3]; }),
         0});  // GEMM-bound: no copy floor
  }
  // A pre-LN block's LayerNorm: the fp32 residual stream in, bf16 out for the matmuls, against
  // ATen's fp32 layer_norm and one cast (a gMLP block casts it twice, once per matmul).
  const int64_t d = 128, act = N * d * 2;
  cases.push_back(
      {"layer_norm_f32_in",
       "d_model = 128",
       N,
       d,
       {(torch::randn({N, d}) * 2).requires_grad_(), FloatLeaf(d, 0.1, 1), FloatLeaf(d, 0.1, 0)},
       One([](const Leaves& l) { return LayerNormBf16(l[0], l[1], l[2], 1e-5); }),
       One([](const Leaves& l) {
         return torch::layer_norm(l[0], {128}, l[1], l[2], 1e-5).to(torch::kBFloat16);
       }),
       2 * act + act + 2 * act + act + 2 * act});  // x in, y out; x, dy in, dx out
  // A pre-LN block's residual add and LayerNorm: the fp32 stream plus a bf16 block output, the
  // fp32 sum (also read by the next residual add) and its bf16 normalization, against ATen's add
  // and the LayerNorm kernel on the sum (autograd then adds the sum's two gradients and casts
  // delta's).
  cases.push_back({"add_layer_norm",
                   "d_model = 128",
                   N,
                   d,
                   {(torch::randn({N, d}) * 2).requires_grad_(), Bf16Leaf(N, d, 0.5, 0),
                    FloatLeaf(d, 0.1, 1), FloatLeaf(d, 0.1, 0)},
                   [](const Leaves& l) {
                     auto [sum, y] = gmlp::kernels::cpu::AddLayerNorm(l[0], l[1], l[2], l[3], 1e-5);
                     return Outputs{sum, y};
                   },
                   [](const Leaves& l) {
                     const torch::Tensor sum = l[0] + l[1];
                     return Outputs{sum, LayerNormBf16(sum, l[2], l[3], 1e-5)};
                   },
                   // x, delta in, sum, y out; sum, dsum, dy in, dx, ddelta out
                   2 * act + act + 2 * act + act + 2 * act + 2 * act + act + 2 * act + act});
  // The same in float32 (no autocast): both float32, the normalized rows too, against ATen's add
  // and fp32 layer_norm.
  cases.push_back(
      {"add_layer_norm_f32",
       "d_model = 128",
       N,
       d,
       {(torch::randn({N, d}) * 2).requires_grad_(), (torch::randn({N, d}) * 0.5).requires_grad_(),
        FloatLeaf(d, 0.1, 1), FloatLeaf(d, 0.1, 0)},
       [](const Leaves& l) {
         auto [sum, y] = gmlp::kernels::cpu::AddLayerNorm(l[0], l[1], l[2], l[3], 1e-5);
         return Outputs{sum, y};
       },
       [](const Leaves& l) {
         const torch::Tensor sum = l[0] + l[1];
         return Outputs{sum, torch::layer_norm(sum, {128}, l[2], l[3], 1e-5)};
       },
       // x, delta in, sum, y out; sum, dsum, dy in, dx out (delta's is dx)
       2 * 2 * 4 * N * d + 3 * 4 * N * d + 4 * N * d});
  // aMLP-tiny's tiny attention: q|k|v (N, 3a) in, (N, a) out, as gmlp.cc wrote it before the
  // kernel (the key bias is float32, as the encoders build it under autocast).
  const int64_t n = 128, B = N / n, a = 64;
  torch::Tensor key_bias = torch::zeros({B, 1, n});
  key_bias.narrow(0, 0, B / 2).narrow(2, 3 * n / 4, n / 4).fill_(-1e9);
  cases.push_back({"attention",
                   "amlp-tiny (n = 128, a = 64)",
                   N,
                   a,
                   {Bf16Leaf(N, 3 * a, 1, 0)},
                   One([=](const Leaves& l) {
                     return gmlp::kernels::cpu::TinyAttentionBf16(l[0], n, B, key_bias);
                   }),
                   One([=](const Leaves& l) {
                     gmlp::kernels::AutocastScope autocast(true);
                     const auto qkv = l[0].view({n, B, 3, a}).unbind(2);
                     const torch::Tensor q =
                         qkv[0].transpose(0, 1) * (1.0 / std::sqrt(static_cast<double>(a)));
                     const torch::Tensor scores =
                         torch::matmul(q, qkv[1].transpose(0, 1).transpose(1, 2)) + key_bias;
                     return torch::matmul(torch::softmax(scores, -1), qkv[2].transpose(0, 1))
                         .transpose(0, 1)
                         .reshape({n * B, a});
                   }),
                   (N * 3 * a + N * a) * 2 * 2});  // q|k|v in, out; dout in, dq|dk|dv out
  // transformer-tiny's self-attention in training: 2 heads of 64 (d = 128), ALiBi, dropout 0.1,
  // against transformer.cc's ATen composition with kernels::cpu::Dropout.
  const int64_t H = 2, hd = H * a;
  const torch::Tensor pos = torch::arange(n, torch::kFloat);
  const torch::Tensor slopes = torch::tensor({0.0625f, 0.00390625f}).view({H, 1, 1});
  const torch::Tensor distance = (pos.view({1, n}) - pos.view({n, 1})).abs();
  const torch::Tensor alibi = -(slopes * distance);
  cases.push_back({"attention_heads",
                   "transformer-tiny (2 heads of 64, ALiBi, dropout 0.1)",
                   N,
                   hd,
                   {Bf16Leaf(N, 3 * hd, 1, 0)},
                   One([=](const Leaves& l) {
                     return gmlp::kernels::cpu::AttentionBf16(l[0], n, B, H, key_bias, alibi, 0.1,
                                                              true);
                   }),
                   One([=](const Leaves& l) {
                     gmlp::kernels::AutocastScope autocast(true);
                     const auto qkv = l[0].view({n, B, 3, H, a}).unbind(2);
                     const torch::Tensor q =
                         qkv[0].permute({1, 2, 0, 3}) * (1.0 / std::sqrt(static_cast<double>(a)));
                     torch::Tensor scores = torch::matmul(q, qkv[1].permute({1, 2, 3, 0}));
                     scores = scores - (slopes * distance).to(scores.scalar_type());
                     scores = scores + key_bias.unsqueeze(1);
                     const torch::Tensor probs =
                         gmlp::kernels::cpu::Dropout(torch::softmax(scores, -1), 0.1, true);
                     return torch::matmul(probs, qkv[2].permute({1, 2, 0, 3}))
                         .permute({2, 0, 1, 3})
                         .reshape({n * B, hd});
                   }),
                   (N * 3 * hd + N * hd) * 2 * 2});
  // The float32 products of model/gemm.h (accumulated into zeroed outputs, forward and backward)
  // against ATen's linear / addmm / matmul, at gmlp-tiny's training shapes.
  auto f32 = [](std::vector<int64_t> sizes) { return torch::randn(sizes).requires_grad_(); };
  for (const auto& [shape, rows, in, out] :
       std::vector<std::tuple<const char*, int64_t, int64_t, int64_t>>{
           {"U: 4096 x 128 -> 384", N, 128, 384},
           {"V: 4096 x 384 -> 128", N, 384, 128},
           {"MLM logits: 614 x 128 -> 8192", 614, 128, 8192}}) {
    cases.push_back(
        {"linear_f32",
         shape,
         rows,
         out,
         {f32({rows, in}), f32({out, in}), f32({out})},
         One([](const Leaves& l) { return gmlp::kernels::cpu::Linear(l[0], l[1], l[2]); }),
         One([](const Leaves& l) { return torch::linear(l[0], l[1], l[2]); }),
         // x, W in, y out; dy in, dx, dW out
         4 * (2 * (rows * in + out * in) + 2 * rows * out)});
  }
  cases.push_back({"spatial_f32",
                   "128 x 128 @ 128 x (32 * 384) + column bias",
                   n,
                   B * 384,
                   {f32({n, n}), f32({n, B * 384}), f32({n, 1})},
                   One([](const Leaves& l) { return gmlp::kernels::cpu::AddMm(l[2], l[0], l[1]); }),
                   One([](const Leaves& l) { return torch::addmm(l[2], l[0], l[1]); }),
                   4 * 4 * n * B * 384});
  cases.push_back({"attention_f32",
                   "transformer-tiny scores: (32, 2, 128, 64) @ (32, 2, 64, 128)",
                   N,
                   n,
                   {f32({B, 2, n, a}), f32({B, 2, a, n})},
                   One([](const Leaves& l) { return gmlp::kernels::cpu::BatchedMm(l[0], l[1]); }),
                   One([](const Leaves& l) { return torch::matmul(l[0], l[1]); }),
                   4 * 2 * (2 * B * 2 * n * a + B * 2 * n * n)});
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 7, iters = 30;
  std::string ops =
      "layer_norm,gelu,gelu_gate,layer_norm_f32_in,add_layer_norm,attention,attention_heads";
  for (int i = 1; i < argc; ++i) {
    if (std::sscanf(argv[i], "--threads=%d", &threads) == 1) continue;
    if (std::sscanf(argv[i], "--rounds=%d", &rounds) == 1) continue;
    if (std::sscanf(argv[i], "--iters=%d", &iters) == 1) continue;
    if (std::strncmp(argv[i], "--ops=", 6) == 0) {
      ops = argv[i] + 6;
      continue;
    }
    std::fprintf(stderr, "fused_ops_bench: unknown flag %s (--threads, --rounds, --iters, --ops)\n",
                 argv[i]);
    return 2;
  }
  gmlp::KeepFreedMemoryInProcess();  // as the trainer runs: no page faults on fresh buffers
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  for (const Case& c : Cases()) {
    if (("," + ops + ",").find("," + c.op + ",") == std::string::npos) continue;
    Outputs dy;  // a random gradient for each output, of its shape and type
    for (const torch::Tensor& out : c.kernel(c.leaves)) {
      dy.push_back(torch::randn(out.sizes()).to(out.scalar_type()));
    }
    TimeMs(c.kernel, c.leaves, dy, 3);  // warm up both
    TimeMs(c.reference, c.leaves, dy, 3);
    std::vector<double> tk, tr, ratio, tc;
    for (int r = 0; r < rounds; ++r) {
      const bool kernel_first = r % 2 == 0;
      const double a = TimeMs(kernel_first ? c.kernel : c.reference, c.leaves, dy, iters);
      const double b = TimeMs(kernel_first ? c.reference : c.kernel, c.leaves, dy, iters);
      tk.push_back(kernel_first ? a : b);
      tr.push_back(kernel_first ? b : a);
      ratio.push_back(tr.back() / tk.back());
      tc.push_back(CopyMs(c.bytes, iters));
    }
    std::printf(
        "{\"op\":\"%s\",\"shape\":\"%s\",\"rows\":%lld,\"d\":%lld,\"threads\":%d,"
        "\"kernel_ms\":%.3f,\"reference_ms\":%.3f,\"speedup_median\":%.3f,\"speedup_min\":%.3f,"
        "\"speedup_max\":%.3f,\"copy_ms\":%.3f}\n",
        c.op.c_str(), c.shape.c_str(), static_cast<long long>(c.rows), static_cast<long long>(c.d),
        threads, Median(tk), Median(tr), Median(ratio),
        *std::min_element(ratio.begin(), ratio.end()),
        *std::max_element(ratio.begin(), ratio.end()), Median(tc));
    std::fflush(stdout);
  }
  return 0;
}
