// LayerNorm, initialization and sequence-major batch helpers (see layers.h).
#include "model/layers.h"

#include "model/autocast.h"
#include "model/gelu_cpu.h"
#include "model/gemm.h"
#include "model/layer_norm_cpu.h"

namespace gmlp::model {

LayerNormImpl::LayerNormImpl(int64_t dim, double eps, bool feeds_matmuls)
    : dim_(dim), eps_(eps), feeds_matmuls_(feeds_matmuls) {
  weight = register_parameter("weight", torch::ones({dim}));
  bias = register_parameter("bias", torch::zeros({dim}));
}

bool LayerNormImpl::WritesBf16(const torch::Tensor& x) const {
  const auto type = x.scalar_type();
  const bool to_bf16 = type == torch::kBFloat16 ||
                       (type == torch::kFloat32 && feeds_matmuls_ && CpuAutocastsToBf16());
  return to_bf16 && x.is_cpu() && weight.scalar_type() == torch::kFloat32;
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  if (WritesBf16(x)) {
    // Written in bf16, computed in float (layer_norm_cpu.h): no casts around it.
    return LayerNormBf16(x.reshape({-1, dim_}), weight, bias, eps_).view(x.sizes());
  }
  const auto type = x.scalar_type();
  const torch::Tensor in =
      (type == torch::kBFloat16 || type == torch::kHalf) ? x.to(weight.scalar_type()) : x;
  return torch::layer_norm(in, {dim_}, weight, bias, eps_);
}

std::pair<torch::Tensor, torch::Tensor> LayerNormImpl::AddAndNormalize(const Residual& r) {
  const torch::Tensor& x = r.x;
  const torch::Tensor& delta = r.delta;
  // One kernel where forward(x + delta) would write delta's dtype: bf16 (a norm that feeds
  // matmuls, under bf16 autocast) for a bf16 delta, float32 (no autocast) for a float32 one.
  const bool kernel = delta.defined() && x.is_cpu() && x.scalar_type() == torch::kFloat32 &&
                      weight.scalar_type() == torch::kFloat32 && delta.sizes() == x.sizes() &&
                      delta.scalar_type() == (WritesBf16(x) ? torch::kBFloat16 : torch::kFloat32);
  if (kernel) {
    if (x.dim() == 2) return AddLayerNorm(x, delta, weight, bias, eps_);  // the blocks' rows
    auto [sum, y] =
        AddLayerNorm(x.reshape({-1, dim_}), delta.reshape({-1, dim_}), weight, bias, eps_);
    return {sum.view(x.sizes()), y.view(x.sizes())};
  }
  torch::Tensor sum = r.Sum();
  torch::Tensor y = forward(sum);
  return {std::move(sum), std::move(y)};
}

DenseImpl::DenseImpl(int64_t d_in, int64_t d_out, double std) {
  weight = register_parameter("weight", torch::empty({d_out, d_in}).normal_(0.0, std));
  bias = register_parameter("bias", torch::zeros({d_out}));
}

torch::Tensor DenseImpl::forward(const torch::Tensor& x) { return Linear(x, weight, bias); }

torch::Tensor LinearGelu(Dense& linear, const torch::Tensor& x, const torch::Tensor& gate) {
  if (!x.is_cpu()) {
    const torch::Tensor z = torch::gelu(linear(x));
    return gate.defined() ? z * gate : z;
  }
  // One kernel for the bias, GELU and the gate (gelu_cpu.h) in bf16, the dtype CPU autocast gives
  // float32 inputs; in float32 only with the gate: GELU alone runs as fast in ATen's float32
  // kernels (bench/RESULTS.md). Where the kernel runs it adds the bias too: oneDNN's bf16 addmm
  // is the slower GEMM, and gemm.h's float32 product is as fast without one (2026-12-04).
  const torch::Tensor& b = linear->bias;
  const auto x_type = x.scalar_type();
  const bool to_bf16 =
      CpuAutocastsToBf16() && (x_type == torch::kFloat32 || x_type == torch::kBFloat16);
  const auto type = to_bf16 ? torch::kBFloat16 : x_type;  // the product's dtype
  const bool gate_in_kernel = gate.defined() && gate.is_cpu() && gate.scalar_type() == type;
  const bool kernel = type == torch::kBFloat16 || (type == torch::kFloat32 && gate_in_kernel);
  const bool bias_in_kernel = kernel && b.defined() && b.scalar_type() == torch::kFloat32;
  const torch::Tensor y = bias_in_kernel ? Linear(x, linear->weight) : linear(x);
  if (kernel && y.scalar_type() == type) {
    const torch::Tensor y_NF = y.reshape({-1, y.size(-1)});
    const torch::Tensor kernel_bias = bias_in_kernel ? b : torch::Tensor();
    if (gate_in_kernel) {
      return BiasGeluGate(y_NF, kernel_bias, gate.reshape(y_NF.sizes())).view(y.sizes());
    }
    const torch::Tensor z = BiasGelu(y_NF, kernel_bias).view(y.sizes());
    return gate.defined() ? z * gate : z;
  }
  const torch::Tensor z = torch::gelu(bias_in_kernel ? y + b : y);  // float32, float64
  return gate.defined() ? z * gate : z;
}

torch::Tensor LinearGeluNorm(Dense& linear, const torch::Tensor& x, LayerNorm& norm) {
  const torch::Tensor& b = linear->bias;
  if (!x.is_cpu() || !b.defined() || b.scalar_type() != torch::kFloat32 ||
      norm->weight.scalar_type() != torch::kFloat32) {
    return norm(LinearGelu(linear, x));
  }
  // As in LinearGelu, the kernel adds the bias, in bf16 and in float32.
  const bool bf16 = CpuAutocastsToBf16();
  const torch::Tensor y = Linear(x, linear->weight);
  if (y.scalar_type() != (bf16 ? torch::kBFloat16 : torch::kFloat32)) {  // e.g. float64
    return norm(torch::gelu(y + b));
  }
  const torch::Tensor y_NF = y.reshape({-1, y.size(-1)});
  return BiasGeluLayerNorm(y_NF, b, norm->weight, norm->bias, norm->eps()).view(y.sizes());
}

SeqBatch MakeSeqBatch(const EncoderInput& input, int64_t max_seq_len, torch::Dtype dtype) {
  const torch::Tensor& ids = input.input_ids;
  TORCH_CHECK(ids.defined() && ids.dim() == 2, "input_ids must be (B, n), got ",
              ids.defined() ? ids.sizes() : torch::IntArrayRef{});
  TORCH_CHECK(ids.scalar_type() == torch::kLong, "input_ids must be int64");
  SeqBatch batch;
  batch.B = ids.size(0);
  batch.n = ids.size(1);
  TORCH_CHECK(batch.n >= 1 && batch.n <= max_seq_len, "sequence length ", batch.n,
              " is outside [1, max_seq_len = ", max_seq_len, "]");
  if (input.segment_ids.defined()) {
    TORCH_CHECK(input.segment_ids.sizes() == ids.sizes(), "segment_ids ", input.segment_ids.sizes(),
                " must match input_ids ", ids.sizes());
  }
  const torch::Tensor& pad = input.pad_mask;
  if (pad.defined()) {
    TORCH_CHECK(pad.sizes() == ids.sizes(), "pad_mask ", pad.sizes(), " must match input_ids ",
                ids.sizes());
    const torch::Tensor keep_BN = pad.to(torch::kBool);
    // On a GPU, asking whether anything is padded would stall the stream (a host sync every
    // forward); building masks that change nothing costs less there.
    if (keep_BN.is_cuda() || !keep_BN.all().item<bool>()) {
      const torch::Tensor keep = keep_BN.to(dtype);
      batch.keep_N1 = keep.t().reshape({batch.n * batch.B, 1});
      batch.key_bias_B1N = ((1.0 - keep) * -1e9).unsqueeze(1);
    }
  }
  return batch;
}

torch::Tensor SeqMajorToBatchMajor(const torch::Tensor& x_ND, int64_t n, int64_t B) {
  return x_ND.view({n, B, x_ND.size(-1)}).transpose(0, 1);
}

namespace {

// (n, B, 3, H, k) rows viewed as part i's (B, H, n, k) batch.
torch::Tensor HeadsPart(const torch::Tensor& qkv_NW, int64_t n, int64_t B, int64_t H, int64_t i) {
  const int64_t k = qkv_NW.size(1) / (3 * H);
  return qkv_NW.view({n, B, 3, H, k}).select(2, i).permute({1, 2, 0, 3});
}

// dst = src * scale, through dst's strides.
void ScaledCopy(const torch::Tensor& src, double scale, torch::Tensor dst) {
  if (scale == 1.0) {
    dst.copy_(src);
  } else {
    torch::mul_out(dst, src, torch::scalar_tensor(scale, src.options()));
  }
}

class SplitHeadsFunction : public torch::autograd::Function<SplitHeadsFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& qkv_NW, int64_t n, int64_t B,
                                                int64_t H, double q_scale) {
    ctx->saved_data["n"] = n;
    ctx->saved_data["B"] = B;
    ctx->saved_data["H"] = H;
    ctx->saved_data["q_scale"] = q_scale;
    const int64_t k = qkv_NW.size(1) / (3 * H);
    torch::autograd::variable_list out;
    for (int64_t i = 0; i < 3; ++i) {
      out.push_back(torch::empty({B, H, n, k}, qkv_NW.options()));
      ScaledCopy(HeadsPart(qkv_NW, n, B, H, i), i == 0 ? q_scale : 1.0, out.back());
    }
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const int64_t n = ctx->saved_data["n"].toInt(), B = ctx->saved_data["B"].toInt(),
                  H = ctx->saved_data["H"].toInt();
    const double q_scale = ctx->saved_data["q_scale"].toDouble();
    // Gradients of unused outputs arrive as zeros (autograd materializes them).
    const torch::Tensor d_qkv =
        torch::empty({n * B, 3 * grads[0].size(1) * grads[0].size(3)}, grads[0].options());
    for (int64_t i = 0; i < 3; ++i) {
      ScaledCopy(grads[i], i == 0 ? q_scale : 1.0, HeadsPart(d_qkv, n, B, H, i));
    }
    return {d_qkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::array<torch::Tensor, 3> SplitHeads(const torch::Tensor& qkv_NW, int64_t n, int64_t B,
                                        int64_t heads, double q_scale) {
  TORCH_CHECK(qkv_NW.dim() == 2 && qkv_NW.size(0) == n * B && qkv_NW.size(1) % (3 * heads) == 0,
              "SplitHeads: rows ", qkv_NW.sizes(), " are not n * B = ", n * B, " rows of 3 x ",
              heads, " heads");
  const torch::Tensor qkv = qkv_NW.contiguous();
  const auto out = SplitHeadsFunction::apply(qkv, n, B, heads, q_scale);
  return {out[0], out[1], out[2]};
}

torch::Tensor LeadingBlock(const torch::Tensor& w_MM, int64_t n) {
  if (n == w_MM.size(0) && n == w_MM.size(1)) return w_MM;
  return w_MM.narrow(0, 0, n).narrow(1, 0, n);
}

torch::Tensor LeadingColumn(const torch::Tensor& b_M, int64_t n) {
  return (n == b_M.size(0) ? b_M : b_M.narrow(0, 0, n)).unsqueeze(1);
}

}  // namespace gmlp::model
