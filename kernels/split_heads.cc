// Attention's heads from sequence-major rows (see split_heads.h).
#include "kernels/split_heads.h"

namespace gmlp::kernels::cpu {
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

}  // namespace gmlp::kernels::cpu
