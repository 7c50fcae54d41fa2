// The one dispatch between gmlp's CPU kernels and ATen (see ops.h, and README.md's table).
#include "kernels/ops.h"

#include <cmath>

#include "kernels/attention_bf16.h"
#include "kernels/autocast.h"
#include "kernels/dropout.h"
#include "kernels/gelu_cpu.h"
#include "kernels/gemm.h"
#include "kernels/layer_norm_cpu.h"
#include "kernels/multi_tensor_cpu.h"
#include "kernels/softmax_xent.h"
#include "kernels/split_heads.h"

namespace gmlp::kernels {

bool Bf16IsFast() {
  static const bool fast = torch::cuda::is_available() || CpuHasNativeBf16();
  return fast;
}

namespace {

bool Auto() { return CurrentPolicy() == Policy::kAuto; }

bool Is(const torch::Tensor& t, torch::ScalarType type) {
  return t.defined() && t.scalar_type() == type;
}

// gemm.h's products: float32 CPU operands outside autocast (which sends matmuls to oneDNN bf16).
bool AccumulatingGemm(const torch::Tensor& a, const torch::Tensor& b) {
  return Auto() && a.is_cpu() && b.is_cpu() && Is(a, torch::kFloat32) && Is(b, torch::kFloat32) &&
         !CpuAutocastEnabled();
}

// Whether LayerNorm(x) runs the kernel LayerNormBf16, which writes bf16: a bf16 input, or a
// float32 one under bf16 autocast whose output only feeds matmuls.
bool NormWritesBf16(const torch::Tensor& x, const torch::Tensor& weight, bool feeds_matmuls) {
  const bool to_bf16 =
      Is(x, torch::kBFloat16) || (Is(x, torch::kFloat32) && feeds_matmuls && CpuAutocastsToBf16());
  return Auto() && to_bf16 && x.is_cpu() && Is(weight, torch::kFloat32);
}

// op(x viewed as 2-D rows (N, d)), viewed back to x's shape.
template <typename Op>
torch::Tensor OnRows(const torch::Tensor& x, Op op) {
  if (x.dim() == 2) return op(x);
  return op(x.reshape({-1, x.size(-1)})).view(x.sizes());
}

torch::Tensor Gated(const torch::Tensor& z, const torch::Tensor& gate) {
  return gate.defined() ? z * gate : z;
}

}  // namespace

torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
  if (!AccumulatingGemm(x, weight)) return torch::linear(x, weight, bias);
  return cpu::Linear(x, weight, bias);
}

torch::Tensor AddMm(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b) {
  if (!AccumulatingGemm(a, b)) return bias.defined() ? torch::addmm(bias, a, b) : torch::mm(a, b);
  return cpu::AddMm(bias, a, b);
}

torch::Tensor BatchedMm(const torch::Tensor& a, const torch::Tensor& b) {
  if (!AccumulatingGemm(a, b)) return torch::matmul(a, b);
  return cpu::BatchedMm(a, b);
}

torch::Tensor LayerNorm(const torch::Tensor& x, const torch::Tensor& weight,
                        const torch::Tensor& bias, double eps, bool feeds_matmuls) {
  if (NormWritesBf16(x, weight, feeds_matmuls)) {
    // Written in bf16, computed in float: no casts around it.
    return OnRows(
        x, [&](const torch::Tensor& x_ND) { return cpu::LayerNormBf16(x_ND, weight, bias, eps); });
  }
  const bool reduced = Is(x, torch::kBFloat16) || Is(x, torch::kHalf);
  return torch::layer_norm(reduced ? x.to(weight.scalar_type()) : x, {x.size(-1)}, weight, bias,
                           eps);
}

std::pair<torch::Tensor, torch::Tensor> AddLayerNorm(const torch::Tensor& x,
                                                     const torch::Tensor& delta,
                                                     const torch::Tensor& weight,
                                                     const torch::Tensor& bias, double eps,
                                                     bool feeds_matmuls) {
  if (!delta.defined()) return {x, LayerNorm(x, weight, bias, eps, feeds_matmuls)};
  // One kernel where LayerNorm(x + delta) would write delta's dtype: bf16 (a norm that feeds
  // matmuls, under bf16 autocast) for a bf16 delta, float32 (no autocast) for a float32 one.
  const auto writes = NormWritesBf16(x, weight, feeds_matmuls) ? torch::kBFloat16 : torch::kFloat32;
  const bool kernel = Auto() && x.is_cpu() && Is(x, torch::kFloat32) &&
                      Is(weight, torch::kFloat32) && delta.sizes() == x.sizes() &&
                      Is(delta, writes);
  if (!kernel) {
    torch::Tensor sum = x + delta;
    torch::Tensor y = LayerNorm(sum, weight, bias, eps, feeds_matmuls);
    return {std::move(sum), std::move(y)};
  }
  if (x.dim() == 2) return cpu::AddLayerNorm(x, delta, weight, bias, eps);  // the blocks' rows
  const int64_t d = x.size(-1);
  auto [sum, y] = cpu::AddLayerNorm(x.reshape({-1, d}), delta.reshape({-1, d}), weight, bias, eps);
  return {sum.view(x.sizes()), y.view(x.sizes())};
}

torch::Tensor LinearGelu(const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias, const torch::Tensor& gate) {
  if (!Auto() || !x.is_cpu()) return Gated(torch::gelu(Linear(x, weight, bias)), gate);
  // One kernel for the bias, GELU and the gate (gelu_cpu.h) in bf16, the dtype CPU autocast gives
  // float32 inputs; in float32 only with the gate: GELU alone runs as fast in ATen's float32
  // kernels (bench/RESULTS.md). Where the kernel runs it adds the bias too: oneDNN's bf16 addmm
  // is the slower GEMM, and gemm.h's float32 product is as fast without one (2026-12-04).
  const bool to_bf16 = CpuAutocastsToBf16() && (Is(x, torch::kFloat32) || Is(x, torch::kBFloat16));
  const auto type = to_bf16 ? torch::kBFloat16 : x.scalar_type();  // the product's dtype
  const bool gate_in_kernel = gate.defined() && gate.is_cpu() && Is(gate, type);
  const bool kernel = type == torch::kBFloat16 || (type == torch::kFloat32 && gate_in_kernel);
  const bool bias_in_kernel = kernel && Is(bias, torch::kFloat32);
  const torch::Tensor y = Linear(x, weight, bias_in_kernel ? torch::Tensor() : bias);
  if (!kernel || !Is(y, type)) {  // float32 without a gate, float64
    return Gated(torch::gelu(bias_in_kernel ? y + bias : y), gate);
  }
  const torch::Tensor y_NF = y.reshape({-1, y.size(-1)});
  const torch::Tensor kernel_bias = bias_in_kernel ? bias : torch::Tensor();
  if (gate_in_kernel) {
    return cpu::BiasGeluGate(y_NF, kernel_bias, gate.reshape(y_NF.sizes())).view(y.sizes());
  }
  return Gated(cpu::BiasGelu(y_NF, kernel_bias).view(y.sizes()), gate);
}

torch::Tensor LinearGeluLayerNorm(const torch::Tensor& x, const torch::Tensor& weight,
                                  const torch::Tensor& bias, const torch::Tensor& norm_weight,
                                  const torch::Tensor& norm_bias, double eps) {
  auto composed = [&] {
    return LayerNorm(LinearGelu(x, weight, bias), norm_weight, norm_bias, eps);
  };
  if (!Auto() || !x.is_cpu() || !Is(bias, torch::kFloat32) || !Is(norm_weight, torch::kFloat32)) {
    return composed();
  }
  // As in LinearGelu, the kernel adds the bias, in bf16 and in float32.
  const torch::Tensor y = Linear(x, weight);
  if (!Is(y, CpuAutocastsToBf16() ? torch::kBFloat16 : torch::kFloat32)) {  // e.g. float64
    return LayerNorm(torch::gelu(y + bias), norm_weight, norm_bias, eps);
  }
  const torch::Tensor y_NF = y.reshape({-1, y.size(-1)});
  return cpu::BiasGeluLayerNorm(y_NF, bias, norm_weight, norm_bias, eps).view(y.sizes());
}

torch::Tensor Attention(const torch::Tensor& qkv, int64_t n, int64_t B, int64_t heads,
                        const torch::Tensor& key_bias, const torch::Tensor& score_bias,
                        double dropout, bool train) {
  TORCH_CHECK(qkv.dim() == 2 && qkv.size(0) == n * B && qkv.size(1) % (3 * heads) == 0,
              "Attention: rows ", qkv.sizes(), " are not n * B = ", n * B, " rows of 3 x ", heads,
              " heads");
  if (Auto() && qkv.is_cpu() && Is(qkv, torch::kBFloat16)) {
    return cpu::AttentionBf16(qkv, n, B, heads, key_bias, score_bias, dropout, train);
  }
  const int64_t k = qkv.size(1) / (3 * heads);
  const double scale = 1.0 / std::sqrt(static_cast<double>(k));
  torch::Tensor q_BHnK, k_BHnK, v_BHnK;
  if (Auto() && qkv.is_cpu() && heads > 1) {
    // One copy each way (split_heads.h); a single head measured no gain.
    const auto split = cpu::SplitHeads(qkv, n, B, heads, scale);
    q_BHnK = split[0];
    k_BHnK = split[1];
    v_BHnK = split[2];
  } else {
    // unbind's backward stacks the three gradients (no zero-filled full-size buffers).
    const auto parts = qkv.view({n, B, 3, heads, k}).unbind(2);  // 3 x (n, B, H, k)
    q_BHnK = parts[0].permute({1, 2, 0, 3}) * scale;
    k_BHnK = parts[1].permute({1, 2, 0, 3});
    v_BHnK = parts[2].permute({1, 2, 0, 3});
  }
  torch::Tensor scores_BHnn = BatchedMm(q_BHnK, k_BHnK.transpose(2, 3));
  if (score_bias.defined()) scores_BHnn = scores_BHnn + score_bias.to(scores_BHnn.scalar_type());
  if (key_bias.defined()) scores_BHnn = scores_BHnn + key_bias.unsqueeze(1);
  const torch::Tensor probs_BHnn = Dropout(torch::softmax(scores_BHnn, -1), dropout, train);
  // (B, H, n, k) -> (n, B, H, k) -> (N, H k): back to the sequence-major rows.
  return BatchedMm(probs_BHnn, v_BHnK).permute({2, 0, 1, 3}).reshape({n * B, heads * k});
}

torch::Tensor Dropout(const torch::Tensor& x, double p, bool train) {
  if (!train || p == 0.0) return x;
  if (Auto() && x.is_cpu()) return cpu::Dropout(x, p, train);
  return torch::dropout(x, p, train);
}

CrossEntropySum SumCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels) {
  if (Auto() && logits.is_cpu() && (Is(logits, torch::kBFloat16) || Is(logits, torch::kFloat32))) {
    // One pass for the loss and the argmax, one for the gradient, no (M, V) log-probabilities
    // (or float32 copy of bf16 logits).
    cpu::SoftmaxXent xent = cpu::SoftmaxCrossEntropy(logits, labels);
    return {xent.loss_M.sum(), std::move(xent.argmax_M)};
  }
  const torch::Tensor logits_f = logits.to(torch::kFloat32);
  return {torch::nn::functional::cross_entropy(
              logits_f, labels,
              torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)),
          logits_f.detach().argmax(1)};
}

void AdamW(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
           const std::vector<torch::Tensor>& exp_avg, const std::vector<torch::Tensor>& exp_avg_sq,
           const std::vector<double>& weight_decay, const AdamWArgs& args) {
  torch::NoGradGuard no_grad;
  if (Auto() && cpu::AllContiguousFloatCpu(params) && cpu::AllContiguousFloatCpu(grads)) {
    cpu::AdamWStepCpu(
        params, grads, exp_avg, exp_avg_sq, weight_decay,
        {args.lr, args.beta1, args.beta2, args.eps, args.bias_correction1, args.bias_correction2});
    return;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    torch::Tensor p = params[i], m = exp_avg[i], v = exp_avg_sq[i];
    const torch::Tensor& g = grads[i];
    m.mul_(args.beta1).add_(g, 1.0 - args.beta1);
    v.mul_(args.beta2).addcmul_(g, g, 1.0 - args.beta2);
    if (weight_decay[i] != 0.0) p.mul_(1.0 - args.lr * weight_decay[i]);
    const torch::Tensor denom = (v.sqrt() / std::sqrt(args.bias_correction2)).add_(args.eps);
    p.addcdiv_(m, denom, -args.lr / args.bias_correction1);
  }
}

torch::Tensor ClipByGlobalNorm(const std::vector<torch::Tensor>& grads, double max_norm) {
  torch::NoGradGuard no_grad;
  if (Auto() && !grads.empty() && cpu::AllContiguousFloatCpu(grads)) {
    // On the CPU reading the norm costs nothing, so the scaling pass runs only when it clips.
    const double total = cpu::GlobalNormCpu(grads);
    if (max_norm > 0.0 && std::isfinite(total) && total > max_norm) {
      cpu::ScaleCpu(grads, static_cast<float>(max_norm / (total + 1e-6)));
    }
    return torch::tensor(total, torch::kFloat64);
  }
  if (grads.empty()) return torch::zeros({}, torch::kFloat64);
  std::vector<torch::Tensor> norms;
  for (const torch::Tensor& g : grads) norms.push_back(g.norm(2).to(torch::kFloat64));
  torch::Tensor total = torch::stack(norms).norm(2);
  if (max_norm > 0.0) {
    // scale = max_norm / (total + 1e-6) where the norm is finite and above max_norm, else 1
    // (a multiplication by exactly 1 changes nothing): decided on the device.
    const torch::Tensor clip = total.isfinite().logical_and(total > max_norm);
    const torch::Tensor scale =
        torch::where(clip, max_norm / (total + 1e-6), torch::ones_like(total)).to(torch::kFloat32);
    for (const torch::Tensor& g : grads) torch::Tensor(g).mul_(scale);
  }
  return total;
}

}  // namespace gmlp::kernels
