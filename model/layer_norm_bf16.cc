// bf16 LayerNorm on the CPU (see layer_norm_bf16.h).
#include "model/layer_norm_bf16.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "model/cpu_kernel_util.h"

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

// TIn is the input's element type: uint16_t (bf16 bits) or float; the output is bf16.
template <typename TIn>
__attribute__((always_inline)) inline void ForwardRowsImpl(const TIn* x, const float* w,
                                                           const float* b, int64_t d, float eps,
                                                           int64_t begin, int64_t end, uint16_t* y,
                                                           float* mean, float* rstd) {
  std::vector<float> row(d);
  float* r = row.data();
  for (int64_t i = begin; i < end; ++i) {
    const TIn* xi = x + i * d;
    for (int64_t j = 0; j < d; ++j) r[j] = Widen(xi[j]);
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
// each).
template <typename TIn>
__attribute__((always_inline)) inline void BackwardRowsImpl(const TIn* x, const uint16_t* dy,
                                                            const float* w, const float* mean,
                                                            const float* rstd, int64_t d,
                                                            int64_t begin, int64_t end, TIn* dx,
                                                            float* dw_part, float* db_part) {
  std::vector<float> buf(2 * d);
  float* xhat = buf.data();
  float* g = buf.data() + d;
  for (int64_t j = 0; j < d; ++j) dw_part[j] = db_part[j] = 0.0f;
  for (int64_t i = begin; i < end; ++i) {
    const TIn* xi = x + i * d;
    const uint16_t* dyi = dy + i * d;
    const float mu = mean[i], rs = rstd[i];
    for (int64_t j = 0; j < d; ++j) {
      const float dyj = Bf16BitsToFloat(dyi[j]);
      xhat[j] = (Widen(xi[j]) - mu) * rs;
      g[j] = dyj * w[j];
      dw_part[j] += dyj * xhat[j];
      db_part[j] += dyj;
    }
    const float inv_d = 1.0f / static_cast<float>(d);
    const float a = LaneSum(d, [&](int64_t j) { return g[j]; }) * inv_d;
    const float c = LaneSum(d, [&](int64_t j) { return g[j] * xhat[j]; }) * inv_d;
    TIn* dxi = dx + i * d;
    for (int64_t j = 0; j < d; ++j) Store(rs * (g[j] - a - xhat[j] * c), dxi + j);
  }
}

// The instantiations, each compiled for several instruction sets.
GMLP_VECTOR_CLONES
void ForwardRows(const uint16_t* x, const float* w, const float* b, int64_t d, float eps,
                 int64_t begin, int64_t end, uint16_t* y, float* mean, float* rstd) {
  ForwardRowsImpl(x, w, b, d, eps, begin, end, y, mean, rstd);
}
GMLP_VECTOR_CLONES
void ForwardRows(const float* x, const float* w, const float* b, int64_t d, float eps,
                 int64_t begin, int64_t end, uint16_t* y, float* mean, float* rstd) {
  ForwardRowsImpl(x, w, b, d, eps, begin, end, y, mean, rstd);
}
GMLP_VECTOR_CLONES
void BackwardRows(const uint16_t* x, const uint16_t* dy, const float* w, const float* mean,
                  const float* rstd, int64_t d, int64_t begin, int64_t end, uint16_t* dx,
                  float* dw_part, float* db_part) {
  BackwardRowsImpl(x, dy, w, mean, rstd, d, begin, end, dx, dw_part, db_part);
}
GMLP_VECTOR_CLONES
void BackwardRows(const float* x, const uint16_t* dy, const float* w, const float* mean,
                  const float* rstd, int64_t d, int64_t begin, int64_t end, float* dx,
                  float* dw_part, float* db_part) {
  BackwardRowsImpl(x, dy, w, mean, rstd, d, begin, end, dx, dw_part, db_part);
}

// Calls f with the tensor's data as uint16_t* (bf16 bits) or float*.
template <typename F>
void WithData(const torch::Tensor& t, F&& f) {
  if (t.scalar_type() == torch::kBFloat16) {
    f(Bf16Bits(t));
  } else {
    f(t.data_ptr<float>());
  }
}

class LayerNormBf16Function : public torch::autograd::Function<LayerNormBf16Function> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_ND,
                               const torch::Tensor& weight_D, const torch::Tensor& bias_D,
                               double eps) {
    const torch::Tensor x = x_ND.contiguous();
    const torch::Tensor w = weight_D.contiguous(), b = bias_D.contiguous();
    const int64_t N = x.size(0), d = x.size(1);
    torch::Tensor y = torch::empty({N, d}, x.options().dtype(torch::kBFloat16));
    const auto f32 = x.options().dtype(torch::kFloat32);
    torch::Tensor mean = torch::empty({N}, f32), rstd = torch::empty({N}, f32);
    const float* wp = w.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    WithData(x, [&](auto* xp) {
      at::parallel_for(0, N, kBlockRows, [&](int64_t begin, int64_t end) {
        ForwardRows(xp, wp, bp, d, static_cast<float>(eps), begin, end, Bf16Bits(y),
                    mean.data_ptr<float>(), rstd.data_ptr<float>());
      });
    });
    ctx->save_for_backward({x, w});
    ctx->saved_data["mean"] = mean;
    ctx->saved_data["rstd"] = rstd;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& w = saved[1];
    const torch::Tensor mean = ctx->saved_data["mean"].toTensor();
    const torch::Tensor rstd = ctx->saved_data["rstd"].toTensor();
    const torch::Tensor dy = grads[0].to(torch::kBFloat16).contiguous();
    const int64_t N = x.size(0), d = x.size(1);
    const int64_t blocks = (N + kBlockRows - 1) / kBlockRows;
    torch::Tensor dx = torch::empty_like(x);
    torch::Tensor parts = torch::empty({2, blocks, d}, w.options());
    float* dw_parts = parts.data_ptr<float>();
    float* db_parts = dw_parts + blocks * d;
    WithData(x, [&](auto* xp) {
      auto* dxp = static_cast<decltype(xp)>(dx.data_ptr());
      at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
        for (int64_t blk = first; blk < last; ++blk) {
          BackwardRows(xp, Bf16Bits(dy), w.data_ptr<float>(), mean.data_ptr<float>(),
                       rstd.data_ptr<float>(), d, blk * kBlockRows,
                       std::min(N, (blk + 1) * kBlockRows), dxp, dw_parts + blk * d,
                       db_parts + blk * d);
        }
      });
    });
    torch::Tensor dw = torch::empty({d}, w.options()), db = torch::empty({d}, w.options());
    SumBlocksInOrder(dw_parts, blocks, d, dw.data_ptr<float>());
    SumBlocksInOrder(db_parts, blocks, d, db.data_ptr<float>());
    return {dx, dw, db, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor LayerNormBf16(const torch::Tensor& x_ND, const torch::Tensor& weight_D,
                            const torch::Tensor& bias_D, double eps) {
  TORCH_CHECK(x_ND.dim() == 2 && x_ND.is_cpu() &&
                  (x_ND.scalar_type() == torch::kBFloat16 || x_ND.scalar_type() == torch::kFloat32),
              "LayerNormBf16: x must be a 2-D bf16 or float32 CPU tensor");
  TORCH_CHECK(weight_D.scalar_type() == torch::kFloat32 && bias_D.scalar_type() == torch::kFloat32 &&
                  weight_D.numel() == x_ND.size(1) && bias_D.numel() == x_ND.size(1),
              "LayerNormBf16: weight and bias must be float32 (", x_ND.size(1), ")");
  return LayerNormBf16Function::apply(x_ND, weight_D, bias_D, eps);
}

}  // namespace gmlp::model
