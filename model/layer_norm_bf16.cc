// bf16 LayerNorm on the CPU (see layer_norm_bf16.h).
#include "model/layer_norm_bf16.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "model/cpu_kernel_util.h"
#include "model/gelu_math.h"

namespace gmlp::model {
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

// What the rows hold before they are normalized: the input x itself (TIn is uint16_t, bf16
// bits, or float), or with kGelu GELU(x + gelu_bias) of a bf16 matmul output x, recomputed in
// backward, where the gradient then goes on through GELU' to x and to gelu_bias.
template <bool kGelu, typename TIn>
__attribute__((always_inline)) inline float RowValue(TIn x, const float* gelu_bias, int64_t j,
                                                     float* slope) {
  float v = Widen(x);
  if constexpr (kGelu) GeluAndSlope(v + gelu_bias[j], &v, slope);
  return v;
}

// The output is bf16.
template <bool kGelu, typename TIn>
__attribute__((always_inline)) inline void ForwardRowsImpl(const TIn* x, const float* gelu_bias,
                                                           const float* w, const float* b,
                                                           int64_t d, float eps, int64_t begin,
                                                           int64_t end, uint16_t* y, float* mean,
                                                           float* rstd) {
  std::vector<float> row(d);
  float* r = row.data();
  for (int64_t i = begin; i < end; ++i) {
    const TIn* xi = x + i * d;
    for (int64_t j = 0; j < d; ++j) {
      float unused;
      r[j] = RowValue<kGelu>(xi[j], gelu_bias, j, &unused);
    }
    const float mu = LaneSum(d, [&](int64_t j) { return r[j]; }) / static_cast<float>(d);
    const float var =
        LaneSum(d, [&](int64_t j) { return (r[j] - mu) * (r[j] - mu); }) / static_cast<float>(d);
    const float rs = 1.0f / std::sqrt(var + eps);
    uint16_t* yi = y + i * d;
    for (int64_t j = 0; j < d; ++j) yi[j] = FloatToBf16Bits((r[j] - mu) * rs * w[j] + b[j]);
    mean[i] = mu;
    rstd[i] = rs;
  }
}

// Rows [begin, end) of one block: dx (of the input's type), and the block's partial dw, db (d
// each), and with kGelu the partial gradient of gelu_bias, dgelu_part (d).
template <bool kGelu, typename TIn>
__attribute__((always_inline)) inline void BackwardRowsImpl(
    const TIn* x, const float* gelu_bias, const uint16_t* dy, const float* w, const float* mean,
    const float* rstd, int64_t d, int64_t begin, int64_t end, TIn* __restrict dx,
    float* __restrict dw_part, float* __restrict db_part, float* __restrict dgelu_part) {
  // Disjoint rows of one buffer: __restrict lets GCC vectorize the loops that write several of
  // them without run-time overlap checks (with too many pairs to check it would not).
  std::vector<float> buf((kGelu ? 3 : 2) * d);
  float* __restrict xhat = buf.data();
  float* __restrict g = buf.data() + d;
  float* __restrict slope = kGelu ? buf.data() + 2 * d : nullptr;
  for (int64_t j = 0; j < d; ++j) dw_part[j] = db_part[j] = 0.0f;
  if constexpr (kGelu) {
    for (int64_t j = 0; j < d; ++j) dgelu_part[j] = 0.0f;
  }
  for (int64_t i = begin; i < end; ++i) {
    const TIn* xi = x + i * d;
    const uint16_t* dyi = dy + i * d;
    const float mu = mean[i], rs = rstd[i];
    if constexpr (kGelu) {
      // GELU and its slope first, in a loop of their own (as in forward: GCC vectorizes GELU
      // there, not inside the loop below).
      for (int64_t j = 0; j < d; ++j) {
        float s;
        xhat[j] = RowValue<kGelu>(xi[j], gelu_bias, j, &s);
        slope[j] = s;
      }
    }
    for (int64_t j = 0; j < d; ++j) {
      const float dyj = Bf16BitsToFloat(dyi[j]);
      xhat[j] = ((kGelu ? xhat[j] : Widen(xi[j])) - mu) * rs;
      g[j] = dyj * w[j];
      dw_part[j] += dyj * xhat[j];
      db_part[j] += dyj;
    }
    const float inv_d = 1.0f / static_cast<float>(d);
    const float a = LaneSum(d, [&](int64_t j) { return g[j]; }) * inv_d;
    const float c = LaneSum(d, [&](int64_t j) { return g[j] * xhat[j]; }) * inv_d;
    TIn* dxi = dx + i * d;
    for (int64_t j = 0; j < d; ++j) {
      float dv = rs * (g[j] - a - xhat[j] * c);
      if constexpr (kGelu) {
        dv *= slope[j];
        dgelu_part[j] += dv;
      }
      Store(dv, dxi + j);
    }
  }
}

// The instantiations, each compiled for several instruction sets, chosen by a tag: Plain
// (gelu_bias unused) for bf16 or float x, Gelu for bf16 x.
struct Plain {};
struct Gelu {};
GMLP_VECTOR_CLONES
void ForwardRows(Plain, const uint16_t* x, const float* gelu_bias, const float* w, const float* b,
                 int64_t d, float eps, int64_t begin, int64_t end, uint16_t* y, float* mean,
                 float* rstd) {
  ForwardRowsImpl<false>(x, gelu_bias, w, b, d, eps, begin, end, y, mean, rstd);
}
GMLP_VECTOR_CLONES
void ForwardRows(Plain, const float* x, const float* gelu_bias, const float* w, const float* b,
                 int64_t d, float eps, int64_t begin, int64_t end, uint16_t* y, float* mean,
                 float* rstd) {
  ForwardRowsImpl<false>(x, gelu_bias, w, b, d, eps, begin, end, y, mean, rstd);
}
GMLP_VECTOR_CLONES
void ForwardRows(Gelu, const uint16_t* x, const float* gelu_bias, const float* w, const float* b,
                 int64_t d, float eps, int64_t begin, int64_t end, uint16_t* y, float* mean,
                 float* rstd) {
  ForwardRowsImpl<true>(x, gelu_bias, w, b, d, eps, begin, end, y, mean, rstd);
}
GMLP_VECTOR_CLONES
void BackwardRows(Plain, const uint16_t* x, const float* gelu_bias, const uint16_t* dy,
                  const float* w, const float* mean, const float* rstd, int64_t d, int64_t begin,
                  int64_t end, uint16_t* dx, float* dw_part, float* db_part, float* dgelu_part) {
  BackwardRowsImpl<false>(x, gelu_bias, dy, w, mean, rstd, d, begin, end, dx, dw_part, db_part,
                          dgelu_part);
}
GMLP_VECTOR_CLONES
void BackwardRows(Plain, const float* x, const float* gelu_bias, const uint16_t* dy, const float* w,
                  const float* mean, const float* rstd, int64_t d, int64_t begin, int64_t end,
                  float* dx, float* dw_part, float* db_part, float* dgelu_part) {
  BackwardRowsImpl<false>(x, gelu_bias, dy, w, mean, rstd, d, begin, end, dx, dw_part, db_part,
                          dgelu_part);
}
GMLP_VECTOR_CLONES
void BackwardRows(Gelu, const uint16_t* x, const float* gelu_bias, const uint16_t* dy,
                  const float* w, const float* mean, const float* rstd, int64_t d, int64_t begin,
                  int64_t end, uint16_t* dx, float* dw_part, float* db_part, float* dgelu_part) {
  BackwardRowsImpl<true>(x, gelu_bias, dy, w, mean, rstd, d, begin, end, dx, dw_part, db_part,
                         dgelu_part);
}

// Calls f(tag, x's data, gelu_bias's data or null): a bf16 x as uint16_t* (bf16 bits), a float32
// one as float*; with gelu_bias defined (x is then bf16) the Gelu rows.
template <typename F>
void WithData(const torch::Tensor& x, const torch::Tensor& gelu_bias, F&& f) {
  if (gelu_bias.defined()) {
    f(Gelu{}, Bf16Bits(x), gelu_bias.data_ptr<float>());
  } else if (x.scalar_type() == torch::kBFloat16) {
    f(Plain{}, Bf16Bits(x), static_cast<const float*>(nullptr));
  } else {
    f(Plain{}, x.data_ptr<float>(), static_cast<const float*>(nullptr));
  }
}

// gelu_bias_D is an empty placeholder (autograd's inputs must be defined) unless `gelu`.
class LayerNormBf16Function : public torch::autograd::Function<LayerNormBf16Function> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_ND,
                               const torch::Tensor& gelu_bias_D, const torch::Tensor& weight_D,
                               const torch::Tensor& bias_D, double eps, bool gelu) {
    const torch::Tensor x = x_ND.contiguous();
    const torch::Tensor gb = gelu ? gelu_bias_D.contiguous() : torch::Tensor();
    const torch::Tensor w = weight_D.contiguous(), b = bias_D.contiguous();
    const int64_t N = x.size(0), d = x.size(1);
    torch::Tensor y = torch::empty({N, d}, x.options().dtype(torch::kBFloat16));
    const auto f32 = x.options().dtype(torch::kFloat32);
    torch::Tensor mean = torch::empty({N}, f32), rstd = torch::empty({N}, f32);
    const float* wp = w.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    WithData(x, gb, [&](auto tag, auto* xp, const float* gbp) {
      at::parallel_for(0, N, kBlockRows, [&](int64_t begin, int64_t end) {
        ForwardRows(tag, xp, gbp, wp, bp, d, static_cast<float>(eps), begin, end, Bf16Bits(y),
                    mean.data_ptr<float>(), rstd.data_ptr<float>());
      });
    });
    ctx->save_for_backward({x, w});
    ctx->saved_data["mean"] = mean;
    ctx->saved_data["rstd"] = rstd;
    if (gelu) ctx->saved_data["gelu_bias"] = gb;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& w = saved[1];
    const torch::Tensor mean = ctx->saved_data["mean"].toTensor();
    const torch::Tensor rstd = ctx->saved_data["rstd"].toTensor();
    const auto gb_it = ctx->saved_data.find("gelu_bias");
    const torch::Tensor gb =
        gb_it == ctx->saved_data.end() ? torch::Tensor() : gb_it->second.toTensor();
    const torch::Tensor dy = grads[0].to(torch::kBFloat16).contiguous();
    const int64_t N = x.size(0), d = x.size(1);
    const int64_t blocks = (N + kBlockRows - 1) / kBlockRows;
    torch::Tensor dx = torch::empty_like(x);
    // Partial sums per block of rows: dw, db, and the GELU bias's when there is one.
    torch::Tensor parts = torch::empty({gb.defined() ? 3 : 2, blocks, d}, w.options());
    float* dw_parts = parts.data_ptr<float>();
    float* db_parts = dw_parts + blocks * d;
    float* dgb_parts = gb.defined() ? db_parts + blocks * d : nullptr;
    WithData(x, gb, [&](auto tag, auto* xp, const float* gbp) {
      auto* dxp = static_cast<decltype(xp)>(dx.data_ptr());
      at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
        for (int64_t blk = first; blk < last; ++blk) {
          BackwardRows(tag, xp, gbp, Bf16Bits(dy), w.data_ptr<float>(), mean.data_ptr<float>(),
                       rstd.data_ptr<float>(), d, blk * kBlockRows,
                       std::min(N, (blk + 1) * kBlockRows), dxp, dw_parts + blk * d,
                       db_parts + blk * d, dgb_parts == nullptr ? nullptr : dgb_parts + blk * d);
        }
      });
    });
    torch::Tensor dw = torch::empty({d}, w.options()), db = torch::empty({d}, w.options());
    SumBlocksInOrder(dw_parts, blocks, d, dw.data_ptr<float>());
    SumBlocksInOrder(db_parts, blocks, d, db.data_ptr<float>());
    torch::Tensor dgb;
    if (gb.defined()) {
      dgb = torch::empty({d}, w.options());
      SumBlocksInOrder(dgb_parts, blocks, d, dgb.data_ptr<float>());
    }
    return {dx, dgb, dw, db, torch::Tensor(), torch::Tensor()};
  }
};

void CheckAffine(const torch::Tensor& x_ND, const torch::Tensor& weight_D,
                 const torch::Tensor& bias_D, const char* op) {
  TORCH_CHECK(weight_D.scalar_type() == torch::kFloat32 &&
                  bias_D.scalar_type() == torch::kFloat32 && weight_D.numel() == x_ND.size(1) &&
                  bias_D.numel() == x_ND.size(1),
              op, ": weight and bias must be float32 (", x_ND.size(1), ")");
}

}  // namespace

torch::Tensor LayerNormBf16(const torch::Tensor& x_ND, const torch::Tensor& weight_D,
                            const torch::Tensor& bias_D, double eps) {
  TORCH_CHECK(x_ND.dim() == 2 && x_ND.is_cpu() &&
                  (x_ND.scalar_type() == torch::kBFloat16 || x_ND.scalar_type() == torch::kFloat32),
              "LayerNormBf16: x must be a 2-D bf16 or float32 CPU tensor");
  CheckAffine(x_ND, weight_D, bias_D, "LayerNormBf16");
  return LayerNormBf16Function::apply(x_ND, torch::empty({0}, weight_D.options()), weight_D, bias_D,
                                      eps, false);
}

torch::Tensor BiasGeluLayerNormBf16(const torch::Tensor& y_ND, const torch::Tensor& gelu_bias_D,
                                    const torch::Tensor& weight_D, const torch::Tensor& bias_D,
                                    double eps) {
  TORCH_CHECK(y_ND.dim() == 2 && y_ND.is_cpu() && y_ND.scalar_type() == torch::kBFloat16,
              "BiasGeluLayerNormBf16: y must be a 2-D bf16 CPU tensor");
  TORCH_CHECK(gelu_bias_D.scalar_type() == torch::kFloat32 && gelu_bias_D.numel() == y_ND.size(1),
              "BiasGeluLayerNormBf16: the GELU bias must be float32 (", y_ND.size(1), ")");
  CheckAffine(y_ND, weight_D, bias_D, "BiasGeluLayerNormBf16");
  return LayerNormBf16Function::apply(y_ND, gelu_bias_D, weight_D, bias_D, eps, true);
}

}  // namespace gmlp::model
