// Matrix products that never ask the BLAS for beta != 1 (see gemm.h).
#include "kernels/gemm.h"

#include <vector>

namespace gmlp::kernels::cpu {
namespace {

// a @ b accumulated into a zeroed buffer (beta = 1).
torch::Tensor Product(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::zeros({a.size(0), b.size(1)}, a.options()).addmm_(a, b);
}

// bias + a @ b, or with `b_is_weight` bias + a @ b^T for a weight b (out, in): its gradient is
// then computed as (out, in) directly, not as the transpose of an (in, out) product.
torch::Tensor Forward(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b,
                      bool b_is_weight) {
  const torch::Tensor m = b_is_weight ? b.t() : b;
  return bias.defined() ? torch::addmm(bias, a, m) : Product(a, m);
}

class GemmFunction : public torch::autograd::Function<GemmFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& bias,
                               const torch::Tensor& a, const torch::Tensor& b, bool b_is_weight) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["b_is_weight"] = b_is_weight;
    ctx->saved_data["bias_sizes"] = bias.sizes().vec();
    return Forward(bias.numel() > 0 ? bias : torch::Tensor(), a, b, b_is_weight);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &a = saved[0], &b = saved[1], &g = grads[0];
    const bool b_is_weight = ctx->saved_data["b_is_weight"].toBool();
    torch::Tensor d_bias, d_a, d_b;
    if (ctx->needs_input_grad(0)) {
      d_bias = g.sum_to_size(ctx->saved_data["bias_sizes"].toIntVector());
    }
    if (ctx->needs_input_grad(1)) d_a = Product(g, b_is_weight ? b : b.t());
    if (ctx->needs_input_grad(2)) d_b = b_is_weight ? Product(g.t(), a) : Product(a.t(), g);
    return {d_bias, d_a, d_b, torch::Tensor()};
  }
};

torch::Tensor Gemm(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b,
                   bool b_is_weight) {
  const bool grad = torch::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad() ||
                                                      (bias.defined() && bias.requires_grad()));
  if (!grad) return Forward(bias, a, b, b_is_weight);
  // An autograd function's inputs must be defined: an empty tensor stands for no bias (a real
  // bias is never empty, as the product is not).
  return GemmFunction::apply(bias.defined() ? bias : torch::empty({0}), a, b, b_is_weight);
}

// a @ b for (batch, M, K) and (batch, K, N), accumulated into a zeroed buffer.
torch::Tensor BatchedProduct(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::zeros({a.size(0), a.size(1), b.size(2)}, a.options()).baddbmm_(a, b);
}

class BatchedGemmFunction : public torch::autograd::Function<BatchedGemmFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b) {
    ctx->save_for_backward({a, b});
    return BatchedProduct(a, b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &a = saved[0], &b = saved[1], &g = grads[0];
    torch::Tensor d_a, d_b;
    if (ctx->needs_input_grad(0)) d_a = BatchedProduct(g, b.transpose(1, 2));
    if (ctx->needs_input_grad(1)) d_b = BatchedProduct(a.transpose(1, 2), g);
    return {d_a, d_b};
  }
};

}  // namespace

torch::Tensor AddMm(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "AddMm: shapes ", a.sizes(),
              " and ", b.sizes(), " cannot be multiplied");
  return Gemm(bias, a, b, /*b_is_weight=*/false);
}

torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
  TORCH_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "Linear: input ",
              x.sizes(), " does not match weight ", weight.sizes());
  if (x.dim() == 2) return Gemm(bias, x, weight, /*b_is_weight=*/true);
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  return Gemm(bias, x.reshape({-1, x.size(-1)}), weight, /*b_is_weight=*/true).view(sizes);
}

torch::Tensor BatchedMm(const torch::Tensor& a, const torch::Tensor& b) {
  const int64_t dims = a.dim();
  TORCH_CHECK(dims >= 3 && b.dim() == dims &&
                  a.sizes().slice(0, dims - 2) == b.sizes().slice(0, dims - 2) &&
                  a.size(-1) == b.size(-2),
              "BatchedMm: shapes ", a.sizes(), " and ", b.sizes(), " are not a batch of products");
  const torch::Tensor a3 = a.reshape({-1, a.size(-2), a.size(-1)});
  const torch::Tensor b3 = b.reshape({-1, b.size(-2), b.size(-1)});
  const bool grad = torch::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad());
  const torch::Tensor out = grad ? BatchedGemmFunction::apply(a3, b3) : BatchedProduct(a3, b3);
  std::vector<int64_t> sizes = a.sizes().vec();
  sizes.back() = b.size(-1);
  return out.view(sizes);
}

}  // namespace gmlp::kernels::cpu
