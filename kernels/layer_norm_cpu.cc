// LayerNorm on the CPU, alone or fused (see layer_norm_cpu.h).
#include "kernels/layer_norm_cpu.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu_kernel_util.h"
#include "kernels/gelu_math.h"

namespace gmlp::kernels::cpu {
namespace {

// Row sums run in kLanes independent accumulators combined in a fixed order (vectorizable
// without reassociation, the same bits in every clone), as in softmax_xent.cc.
constexpr int64_t kLanes = 16;
// Rows per block of the weight/bias gradient partial sums: fixed, so the sums' order is too.
constexpr int64_t kBlockRows = 64;

template <typename F>
inline float LaneSum(int64_t d, F&& term) {
  float s[kLanes] = {};
  const int64_t full = d - d % kLanes;
  for (int64_t j = 0; j < full; j += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) s[k] += term(j + k);
  }
  for (int64_t j = full; j < d; ++j) s[j - full] += term(j);
  float total = 0;
  for (int64_t k = 0; k < kLanes; ++k) total += s[k];
  return total;
}

// What the rows hold before they are normalized, the kernel's prologue:
//   kNone  the input x itself;
//   kGelu  GELU(x + gelu_bias) of a matmul output x, recomputed in backward, where the
//          gradient then goes on through GELU' to x and to gelu_bias;
//   kAdd   x + delta: a float32 x (the residual stream) plus a block's output delta. The sum is
//          written too; backward reads it as its x, adds the sum's own gradient (if any) to the
//          normalization's and writes that for x and, when delta is bf16, for delta.
enum class Prologue { kNone, kGelu, kAdd };

// Element types: TIn is x's (uint16_t, bf16 bits, or float), TAct the activations' around the
// norm: its output y and y's gradient, and delta and its gradient (uint16_t or float).

// What a prologue reads or writes besides x, y and the statistics (null where unused).
template <typename TAct>
struct Extras {
  const float* gelu_bias = nullptr;  // kGelu: (d)
  float* dgelu_part = nullptr;       // kGelu, backward: this block of rows' partial sum (d)
  const TAct* delta = nullptr;       // kAdd, forward: (N, d)
  float* sum = nullptr;              // kAdd, forward: (N, d)
  const float* dsum = nullptr;       // kAdd, backward: the sum's gradient from its other uses
  TAct* ddelta = nullptr;            // kAdd, backward, bf16 delta: (N, d)
};

template <Prologue kP, typename TIn>
__attribute__((always_inline)) inline float RowValue(TIn x, const float* gelu_bias, int64_t j,
                                                     float* slope) {
  float v = Widen(x);
  if constexpr (kP == Prologue::kGelu) GeluAndSlope(v + gelu_bias[j], &v, slope);
  return v;
}

template <Prologue kP, typename TIn, typename TAct>
__attribute__((always_inline)) inline void ForwardRowsImpl(const TIn* x, const Extras<TAct>& e,
                                                           const float* w, const float* b,
                                                           int64_t d, float eps, int64_t begin,
                                                           int64_t end, TAct* y, float* mean,
                                                           float* rstd) {
  std::vector<float> row(d);
  float* __restrict r = row.data();
  for (int64_t i = begin; i < end; ++i) {
    const TIn* xi = x + i * d;
    if constexpr (kP == Prologue::kAdd) {
      const TAct* di = e.delta + i * d;
      float* __restrict si = e.sum + i * d;
      for (int64_t j = 0; j < d; ++j) si[j] = r[j] = Widen(xi[j]) + Widen(di[j]);
    } else {
      for (int64_t j = 0; j < d; ++j) {
        float unused;
        r[j] = RowValue<kP>(xi[j], e.gelu_bias, j, &unused);
      }
    }
    const float mu = LaneSum(d, [&](int64_t j) { return r[j]; }) / static_cast<float>(d);
    const float var =
        LaneSum(d, [&](int64_t j) { return (r[j] - mu) * (r[j] - mu); }) / static_cast<float>(d);
    const float rs = 1.0f / std::sqrt(var + eps);
    TAct* __restrict yi = y + i * d;
    for (int64_t j = 0; j < d; ++j) Store((r[j] - mu) * rs * w[j] + b[j], yi + j);
    mean[i] = mu;
    rstd[i] = rs;
  }
}

// Row i's dx = rs * (g - a - xhat * c), from the row's g = dy * w, xhat and the two means a and
// c: with kGelu times GELU's slope (summed into gelu_bias's partial gradient), with kAdd plus
// the residual's gradient and copied into ddelta when that is bf16.
template <Prologue kP, typename TIn, typename TAct>
__attribute__((always_inline)) inline void StoreRowGrad(
    const Extras<TAct>& e, const float* __restrict g, const float* __restrict xhat,
    const float* __restrict slope, float a, float c, float rs, int64_t i, int64_t d,
    TIn* __restrict dxi, float* __restrict dgelu_part) {
  if constexpr (kP == Prologue::kAdd) {
    // A float32 delta's gradient is dx itself (no second copy); a bf16 one is dx rounded.
    constexpr bool kWriteDdelta = !std::is_same_v<TAct, float>;
    TAct* __restrict ddi = kWriteDdelta ? e.ddelta + i * d : nullptr;
    if (e.dsum != nullptr) {
      const float* dsi = e.dsum + i * d;
      for (int64_t j = 0; j < d; ++j) {
        const float dv = rs * (g[j] - a - xhat[j] * c) + dsi[j];
        Store(dv, dxi + j);
        if constexpr (kWriteDdelta) Store(dv, ddi + j);
      }
    } else {
      for (int64_t j = 0; j < d; ++j) {
        const float dv = rs * (g[j] - a - xhat[j] * c);
        Store(dv, dxi + j);
        if constexpr (kWriteDdelta) Store(dv, ddi + j);
      }
    }
  } else {
    for (int64_t j = 0; j < d; ++j) {
      float dv = rs * (g[j] - a - xhat[j] * c);
      if constexpr (kP == Prologue::kGelu) {
        dv *= slope[j];
        dgelu_part[j] += dv;
      }
      Store(dv, dxi + j);
    }
  }
}

// Rows [begin, end) of one block: dx (of the input's type) and the block's partial dw, db (d
// each); with kGelu also gelu_bias's partial gradient, with kAdd and a bf16 delta also ddelta.
template <Prologue kP, typename TIn, typename TAct>
__attribute__((always_inline)) inline void BackwardRowsImpl(
    const TIn* x, const Extras<TAct>& e, const TAct* dy, const float* w, const float* mean,
    const float* rstd, int64_t d, int64_t begin, int64_t end, TIn* __restrict dx,
    float* __restrict dw_part, float* __restrict db_part) {
  constexpr bool kGelu = kP == Prologue::kGelu;
  // Disjoint rows of one buffer: __restrict lets GCC vectorize the loops that write several of
  // them without run-time overlap checks (with too many pairs to check it would not).
  std::vector<float> buf((kGelu ? 3 : 2) * d);
  float* __restrict xhat = buf.data();
  float* __restrict g = buf.data() + d;
  float* __restrict slope = kGelu ? buf.data() + 2 * d : nullptr;
  float* __restrict dgelu_part = e.dgelu_part;
  for (int64_t j = 0; j < d; ++j) dw_part[j] = db_part[j] = 0.0f;
  if constexpr (kGelu) {
    for (int64_t j = 0; j < d; ++j) dgelu_part[j] = 0.0f;
  }
  for (int64_t i = begin; i < end; ++i) {
    const TIn* xi = x + i * d;
    const TAct* dyi = dy + i * d;
    const float mu = mean[i], rs = rstd[i];
    if constexpr (kGelu) {
      // GELU and its slope first, in a loop of their own (as in forward: GCC vectorizes GELU
      // there, not inside the loop below).
      for (int64_t j = 0; j < d; ++j) {
        float s;
        xhat[j] = RowValue<kP>(xi[j], e.gelu_bias, j, &s);
        slope[j] = s;
      }
    }
    for (int64_t j = 0; j < d; ++j) {
      const float dyj = Widen(dyi[j]);
      xhat[j] = ((kGelu ? xhat[j] : Widen(xi[j])) - mu) * rs;
      g[j] = dyj * w[j];
      dw_part[j] += dyj * xhat[j];
      db_part[j] += dyj;
    }
    const float inv_d = 1.0f / static_cast<float>(d);
    const float a = LaneSum(d, [&](int64_t j) { return g[j]; }) * inv_d;
    const float c = LaneSum(d, [&](int64_t j) { return g[j] * xhat[j]; }) * inv_d;
    StoreRowGrad<kP>(e, g, xhat, slope, a, c, rs, i, d, dx + i * d, dgelu_part);
  }
}

// The instantiations, each compiled for several instruction sets (GMLP_VECTOR_CLONES) and chosen
// by a tag: Plain for a bf16 or float x normalized into bf16, Gelu and Add into bf16 (under bf16
// autocast) or float32.
template <Prologue kP>
struct Tag {
  static constexpr Prologue kPrologue = kP;
};
using Plain = Tag<Prologue::kNone>;
using Gelu = Tag<Prologue::kGelu>;
using Add = Tag<Prologue::kAdd>;

#define GMLP_LAYER_NORM_ROWS(TAG, TIN, TACT)                                                     \
  GMLP_VECTOR_CLONES                                                                             \
  void ForwardRows(TAG, const TIN* x, const Extras<TACT>& e, const float* w, const float* b,     \
                   int64_t d, float eps, int64_t begin, int64_t end, TACT* y, float* mean,       \
                   float* rstd) {                                                                \
    ForwardRowsImpl<TAG::kPrologue>(x, e, w, b, d, eps, begin, end, y, mean, rstd);              \
  }                                                                                              \
  GMLP_VECTOR_CLONES                                                                             \
  void BackwardRows(TAG, const TIN* x, const Extras<TACT>& e, const TACT* dy, const float* w,    \
                    const float* mean, const float* rstd, int64_t d, int64_t begin, int64_t end, \
                    TIN* dx, float* dw_part, float* db_part) {                                   \
    BackwardRowsImpl<TAG::kPrologue>(x, e, dy, w, mean, rstd, d, begin, end, dx, dw_part,        \
                                     db_part);                                                   \
  }
GMLP_LAYER_NORM_ROWS(Plain, uint16_t, uint16_t)
GMLP_LAYER_NORM_ROWS(Plain, float, uint16_t)
GMLP_LAYER_NORM_ROWS(Gelu, uint16_t, uint16_t)
GMLP_LAYER_NORM_ROWS(Gelu, float, float)
GMLP_LAYER_NORM_ROWS(Add, float, uint16_t)
GMLP_LAYER_NORM_ROWS(Add, float, float)
#undef GMLP_LAYER_NORM_ROWS

// Normalizes the rows of x (N, d) into a new y of TAct's type (`y_type`); returns y, and the
// rows' mean and 1/std.
template <typename TagT, typename TIn, typename TAct>
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> Forward(TagT tag, const TIn* x,
                                                                const Extras<TAct>& e,
                                                                const torch::Tensor& w,
                                                                const torch::Tensor& b, int64_t N,
                                                                double eps) {
  const int64_t d = w.numel();
  const auto f32 = w.options();
  torch::Tensor y = torch::empty(
      {N, d}, f32.dtype(std::is_same_v<TAct, float> ? torch::kFloat32 : torch::kBFloat16));
  torch::Tensor mean = torch::empty({N}, f32), rstd = torch::empty({N}, f32);
  at::parallel_for(0, N, kBlockRows, [&](int64_t begin, int64_t end) {
    ForwardRows(tag, x, e, w.data_ptr<float>(), b.data_ptr<float>(), d, static_cast<float>(eps),
                begin, end, KernelData<TAct>(y), mean.data_ptr<float>(), rstd.data_ptr<float>());
  });
  return {y, mean, rstd};
}

// Backward over fixed blocks of rows into dx; returns the weight's and bias's gradients and, for
// Gelu, gelu_bias's, each summed over the blocks in order.
template <typename TagT, typename TIn, typename TAct>
std::vector<torch::Tensor> Backward(TagT tag, const TIn* x, Extras<TAct> e, const torch::Tensor& dy,
                                    const torch::Tensor& w, const torch::Tensor& mean,
                                    const torch::Tensor& rstd, TIn* dx) {
  const int64_t N = mean.numel(), d = w.numel();
  const int64_t blocks = (N + kBlockRows - 1) / kBlockRows;
  const int64_t n_grads = TagT::kPrologue == Prologue::kGelu ? 3 : 2;
  torch::Tensor parts = torch::empty({n_grads, blocks, d}, w.options());
  float* const parts_p = parts.data_ptr<float>();
  at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t blk = first; blk < last; ++blk) {
      Extras<TAct> eb = e;
      if (n_grads == 3) eb.dgelu_part = parts_p + (2 * blocks + blk) * d;
      BackwardRows(tag, x, eb, KernelData<TAct>(dy), w.data_ptr<float>(), mean.data_ptr<float>(),
                   rstd.data_ptr<float>(), d, blk * kBlockRows, std::min(N, (blk + 1) * kBlockRows),
                   dx, parts_p + blk * d, parts_p + (blocks + blk) * d);
    }
  });
  std::vector<torch::Tensor> grads;
  for (int64_t k = 0; k < n_grads; ++k) {
    grads.push_back(torch::empty({d}, w.options()));
    SumBlocksInOrder(parts_p + k * blocks * d, blocks, d, grads.back().data_ptr<float>());
  }
  return grads;
}

// LayerNorm of x into bf16, or with `gelu` of GELU(x + gelu_bias) into x's dtype. gelu_bias_D is
// an empty placeholder (autograd's inputs must be defined) unless `gelu` and `has_gelu_bias`;
// without a bias the kernel adds zeros and backward drops the bias gradient.
class LayerNormFunction : public torch::autograd::Function<LayerNormFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_ND,
                               const torch::Tensor& gelu_bias_D, const torch::Tensor& weight_D,
                               const torch::Tensor& bias_D, double eps, bool gelu,
                               bool has_gelu_bias) {
    const torch::Tensor x = x_ND.contiguous();
    const torch::Tensor w = weight_D.contiguous(), b = bias_D.contiguous();
    torch::Tensor y, mean, rstd;
    if (gelu) {
      const torch::Tensor gb = has_gelu_bias ? gelu_bias_D.contiguous() : torch::zeros_like(w);
      WithKernelType(x, [&](auto t) {
        using T = decltype(t);
        Extras<T> e;
        e.gelu_bias = gb.data_ptr<float>();
        std::tie(y, mean, rstd) = Forward(Gelu{}, KernelData<T>(x), e, w, b, x.size(0), eps);
      });
      ctx->saved_data["gelu_bias"] = gb;
      ctx->saved_data["has_gelu_bias"] = has_gelu_bias;
    } else {
      WithKernelType(x, [&](auto t) {
        std::tie(y, mean, rstd) =
            Forward(Plain{}, KernelData<decltype(t)>(x), Extras<uint16_t>{}, w, b, x.size(0), eps);
      });
    }
    ctx->save_for_backward({x, w, mean, rstd});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &w = saved[1], &mean = saved[2], &rstd = saved[3];
    torch::Tensor dx = torch::empty_like(x);
    const auto gb = ctx->saved_data.find("gelu_bias");
    const bool gelu = gb != ctx->saved_data.end();
    // The output's dtype: x's for Gelu, bf16 for Plain.
    const torch::Tensor dy = grads[0].to(gelu ? x.scalar_type() : torch::kBFloat16).contiguous();
    std::vector<torch::Tensor> dp;  // dw, db [, dgelu_bias]
    WithKernelType(x, [&](auto t) {
      using T = decltype(t);
      if (gelu) {
        Extras<T> e;
        e.gelu_bias = gb->second.toTensor().data_ptr<float>();
        dp = Backward(Gelu{}, KernelData<T>(x), e, dy, w, mean, rstd, KernelData<T>(dx));
      } else {
        dp = Backward(Plain{}, KernelData<T>(x), Extras<uint16_t>{}, dy, w, mean, rstd,
                      KernelData<T>(dx));
      }
    });
    const bool has_gelu_bias = gelu && ctx->saved_data["has_gelu_bias"].toBool();
    return {dx,
            has_gelu_bias ? dp[2] : torch::Tensor(),
            dp[0],
            dp[1],
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

// (x + delta, LayerNorm(x + delta)) for a float32 x and a bf16 or float32 delta.
class AddLayerNormFunction : public torch::autograd::Function<AddLayerNormFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x_ND,
                                                const torch::Tensor& delta_ND,
                                                const torch::Tensor& weight_D,
                                                const torch::Tensor& bias_D, double eps) {
    const torch::Tensor x = x_ND.contiguous(), delta = delta_ND.contiguous();
    const torch::Tensor w = weight_D.contiguous(), b = bias_D.contiguous();
    torch::Tensor sum = torch::empty_like(x), y, mean, rstd;
    WithKernelType(delta, [&](auto t) {
      using T = decltype(t);
      Extras<T> e;
      e.delta = KernelData<T>(delta);
      e.sum = sum.data_ptr<float>();
      std::tie(y, mean, rstd) = Forward(Add{}, x.data_ptr<float>(), e, w, b, x.size(0), eps);
    });
    // Backward normalizes the sum again, so it is saved (as an output) instead of x and delta.
    ctx->save_for_backward({sum, w, mean, rstd});
    ctx->saved_data["bf16_delta"] = delta.scalar_type() == torch::kBFloat16;
    return {sum, y};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &sum = saved[0], &w = saved[1], &mean = saved[2], &rstd = saved[3];
    const bool bf16_delta = ctx->saved_data["bf16_delta"].toBool();
    // The sum's own gradient: undefined (null in the kernel) when nothing else read the sum.
    const torch::Tensor dsum =
        grads[0].defined() ? grads[0].to(torch::kFloat32).contiguous() : torch::Tensor();
    const torch::Tensor dy =
        grads[1].to(bf16_delta ? torch::kBFloat16 : torch::kFloat32).contiguous();
    torch::Tensor dx = torch::empty_like(sum);
    // A float32 delta's gradient is x's (as an add's backward returns one tensor for both).
    const torch::Tensor ddelta =
        bf16_delta ? torch::empty(sum.sizes(), sum.options().dtype(torch::kBFloat16)) : dx;
    std::vector<torch::Tensor> dp;  // dw, db
    WithKernelType(ddelta, [&](auto t) {
      using T = decltype(t);
      Extras<T> e;
      e.dsum = KernelData<float>(dsum);
      if (bf16_delta) e.ddelta = KernelData<T>(ddelta);
      dp = Backward(Add{}, sum.data_ptr<float>(), e, dy, w, mean, rstd, dx.data_ptr<float>());
    });
    return {dx, ddelta, dp[0], dp[1], torch::Tensor()};
  }
};

void CheckAffine(const torch::Tensor& x_ND, const torch::Tensor& weight_D,
                 const torch::Tensor& bias_D, const char* op) {
  TORCH_CHECK(weight_D.scalar_type() == torch::kFloat32 &&
                  bias_D.scalar_type() == torch::kFloat32 && weight_D.numel() == x_ND.size(1) &&
                  bias_D.numel() == x_ND.size(1),
              op, ": weight and bias must be float32 (", x_ND.size(1), ")");
}

// An autograd input for an absent GELU bias.
torch::Tensor Placeholder() { return torch::empty({0}); }

}  // namespace

torch::Tensor LayerNormBf16(const torch::Tensor& x_ND, const torch::Tensor& weight_D,
                            const torch::Tensor& bias_D, double eps) {
  TORCH_CHECK(x_ND.dim() == 2 && x_ND.is_cpu() &&
                  (x_ND.scalar_type() == torch::kBFloat16 || x_ND.scalar_type() == torch::kFloat32),
              "LayerNormBf16: x must be a 2-D bf16 or float32 CPU tensor");
  CheckAffine(x_ND, weight_D, bias_D, "LayerNormBf16");
  return LayerNormFunction::apply(x_ND, Placeholder(), weight_D, bias_D, eps, false, false);
}

torch::Tensor BiasGeluLayerNorm(const torch::Tensor& y_ND, const torch::Tensor& gelu_bias_D,
                                const torch::Tensor& weight_D, const torch::Tensor& bias_D,
                                double eps) {
  TORCH_CHECK(y_ND.dim() == 2 && y_ND.is_cpu() &&
                  (y_ND.scalar_type() == torch::kBFloat16 || y_ND.scalar_type() == torch::kFloat32),
              "BiasGeluLayerNorm: y must be a 2-D bf16 or float32 CPU tensor");
  TORCH_CHECK(!gelu_bias_D.defined() || (gelu_bias_D.scalar_type() == torch::kFloat32 &&
                                         gelu_bias_D.numel() == y_ND.size(1)),
              "BiasGeluLayerNorm: the GELU bias must be float32 (", y_ND.size(1), ") or undefined");
  CheckAffine(y_ND, weight_D, bias_D, "BiasGeluLayerNorm");
  const bool has_bias = gelu_bias_D.defined();
  return LayerNormFunction::apply(y_ND, has_bias ? gelu_bias_D : Placeholder(), weight_D, bias_D,
                                  eps, true, has_bias);
}

std::pair<torch::Tensor, torch::Tensor> AddLayerNorm(const torch::Tensor& x_ND,
                                                     const torch::Tensor& delta_ND,
                                                     const torch::Tensor& weight_D,
                                                     const torch::Tensor& bias_D, double eps) {
  TORCH_CHECK(x_ND.dim() == 2 && x_ND.is_cpu() && x_ND.scalar_type() == torch::kFloat32,
              "AddLayerNorm: x must be a 2-D float32 CPU tensor");
  TORCH_CHECK(
      delta_ND.sizes() == x_ND.sizes() && delta_ND.is_cpu() &&
          (delta_ND.scalar_type() == torch::kBFloat16 || delta_ND.scalar_type() == torch::kFloat32),
      "AddLayerNorm: delta must be a bf16 or float32 CPU tensor of x's shape ", x_ND.sizes());
  CheckAffine(x_ND, weight_D, bias_D, "AddLayerNorm");
  const auto out = AddLayerNormFunction::apply(x_ND, delta_ND, weight_D, bias_D, eps);
  return {out[0], out[1]};
}

}  // namespace gmlp::kernels::cpu
