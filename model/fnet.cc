// FNet blocks (see fnet.h for the equations).
#include "model/fnet.h"

#include <cmath>

#include "kernels/ops.h"

namespace gmlp::model {

// The block of the arch-table row (its parameters: fnet.h).
class FnetBlockImpl : public EncoderBlockImpl {
 public:
  explicit FnetBlockImpl(const EncoderConfig& config);
  Residual forward(const Residual& in, const SeqBatch& batch) override;

 private:
  double dropout_;
  LayerNorm mix_norm_{nullptr};
  Dense ffn_in_{nullptr}, ffn_out_{nullptr};
  LayerNorm ffn_norm_{nullptr};
};
namespace {

// (C, S), each (B, n, n) in `options`: for sequence b the top-left L_b x L_b block holds the DFT
// matrices of length L_b, C[i, j] = cos(2 pi (i j mod L_b) / L_b) and S the same with sin, and
// the rest is zero. lengths: (B) int64 on the CPU, each in [1, n]. The angles come from the L_b
// values 2 pi k / L_b (computed in float64), gathered by i j mod L_b, which keeps them exact.
std::pair<torch::Tensor, torch::Tensor> DftMatrices(const torch::Tensor& lengths_B, int64_t n,
                                                    torch::TensorOptions options) {
  const auto f64 = torch::TensorOptions(torch::kFloat64);
  const torch::Tensor L_B11 = lengths_B.view({-1, 1, 1});
  const torch::Tensor i_n = torch::arange(n, torch::kLong);
  const torch::Tensor index_Bnn = torch::outer(i_n, i_n).unsqueeze(0).remainder(L_B11);
  const torch::Tensor angle_Bn = (2.0 * M_PI) * torch::arange(n, f64).unsqueeze(0) /
                                 lengths_B.to(torch::kFloat64).unsqueeze(1);
  const torch::Tensor real_Bn = i_n.unsqueeze(0).lt(lengths_B.unsqueeze(1)).to(torch::kFloat64);
  const torch::Tensor keep_Bnn = real_Bn.unsqueeze(2) * real_Bn.unsqueeze(1);
  const int64_t B = lengths_B.size(0);
  auto table = [&](const torch::Tensor& values_Bn) {
    return (values_Bn.gather(1, index_Bnn.reshape({B, n * n})).view({B, n, n}) * keep_Bnn)
        .to(options);
  };
  return {table(torch::cos(angle_Bn)), table(torch::sin(angle_Bn))};
}

}  // namespace

torch::Tensor FourierMix(const torch::Tensor& x_ND, const SeqBatch& batch) {
  const int64_t n = batch.n, B = batch.B, d = x_ND.size(1);
  const auto options = x_ND.options().requires_grad(false);
  // Over the hidden axis (every row alone): x C_d and x S_d (C_d, S_d symmetric: x W^T = x W).
  const auto [c_dd, s_dd] = DftMatrices(torch::full({1}, d, torch::kLong), d, options);
  const torch::Tensor xc_ND = kernels::Linear(x_ND, c_dd[0]);
  const torch::Tensor xs_ND = kernels::Linear(x_ND, s_dd[0]);
  if (!batch.keep_N1.defined()) {
    // One length: C_n and S_n on the (n, B*d) view of the sequence-major rows.
    const auto [c_nn, s_nn] = DftMatrices(torch::full({1}, n, torch::kLong), n, options);
    return (kernels::AddMm({}, c_nn[0], xc_ND.view({n, B * d})) -
            kernels::AddMm({}, s_nn[0], xs_ND.view({n, B * d})))
        .view({n * B, d});
  }
  // Each sequence over its real length: batched (B, n, n) @ (B, n, d).
  const torch::Tensor lengths_B =
      batch.keep_N1.view({n, B}).sum(0).to(torch::kCPU, torch::kLong).clamp_min(1);
  const auto [c_Bnn, s_Bnn] = DftMatrices(lengths_B, n, options);
  auto batch_major = [&](const torch::Tensor& t_ND) {
    return t_ND.view({n, B, d}).transpose(0, 1);
  };
  const torch::Tensor out_Bnd =
      kernels::BatchedMm(c_Bnn, batch_major(xc_ND)) - kernels::BatchedMm(s_Bnn, batch_major(xs_ND));
  return out_Bnd.transpose(0, 1).reshape({n * B, d});
}

FnetBlockImpl::FnetBlockImpl(const EncoderConfig& config) : dropout_(config.dropout) {
  const int64_t d = config.d_model, f = config.d_ffn;
  const double std = config.init_std;
  mix_norm_ = register_module("mix_norm", LayerNorm(d, config.layer_norm_eps));
  ffn_in_ = register_module("ffn_in", Dense(d, f, std));
  ffn_out_ = register_module("ffn_out", Dense(f, d, std));
  ffn_norm_ = register_module("ffn_norm", LayerNorm(d, config.layer_norm_eps));
}

Residual FnetBlockImpl::forward(const Residual& in, const SeqBatch& batch) {
  // Post-LN: each norm reads its sum (in one pass with the add where AddAndNormalize can).
  const torch::Tensor x_ND = in.Sum();
  const torch::Tensor y_ND = mix_norm_->AddAndNormalize({x_ND, FourierMix(x_ND, batch)}).second;
  const torch::Tensor ffn_ND =
      kernels::Dropout(ffn_out_(LinearGelu(ffn_in_, y_ND)), dropout_, is_training());
  return {ffn_norm_->AddAndNormalize({y_ND, ffn_ND}).second, {}};
}

// The arch table's constructor (arch.cc).
std::shared_ptr<EncoderBlockImpl> MakeFnetBlock(const EncoderConfig& config) {
  return std::make_shared<FnetBlockImpl>(config);
}

}  // namespace gmlp::model
