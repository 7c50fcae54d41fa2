// Token-mixing MLP blocks and encoder (see mixer.h).
#include "model/mixer.h"

#include "kernels/ops.h"

namespace gmlp::model {

// The block of the arch-table row (its parameters: mixer.h).
class MixerBlockImpl : public EncoderBlockImpl {
 public:
  explicit MixerBlockImpl(const EncoderConfig& config);
  Residual forward(const Residual& in, const SeqBatch& batch) override;

 private:
  double dropout_;
  LayerNorm token_norm_{nullptr};
  torch::Tensor token_in_weight_, token_in_bias_, token_out_weight_, token_out_bias_;
  LayerNorm channel_norm_{nullptr};
  Dense channel_in_{nullptr}, channel_out_{nullptr};
};

MixerBlockImpl::MixerBlockImpl(const EncoderConfig& config) : dropout_(config.dropout) {
  const int64_t d = config.d_model, f = config.d_ffn, t = config.token_mlp_dim;
  const int64_t n_max = config.max_seq_len;
  const double std = config.init_std;
  token_norm_ = register_module("token_norm", LayerNorm(d, config.layer_norm_eps));
  token_in_weight_ =
      register_parameter("token_in_weight", torch::empty({t, n_max}).normal_(0.0, std));
  token_in_bias_ = register_parameter("token_in_bias", torch::zeros({t}));
  token_out_weight_ =
      register_parameter("token_out_weight", torch::empty({n_max, t}).normal_(0.0, std));
  token_out_bias_ = register_parameter("token_out_bias", torch::zeros({n_max}));
  channel_norm_ =
      register_module("channel_norm", LayerNorm(d, config.layer_norm_eps, /*feeds_matmuls=*/true));
  channel_in_ = register_module("channel_in", Dense(d, f, std));
  channel_out_ = register_module("channel_out", Dense(f, d, std));
}

Residual MixerBlockImpl::forward(const Residual& in, const SeqBatch& batch) {
  auto [x_ND, h_ND] = token_norm_->AddAndNormalize(in);
  const int64_t n = batch.n, B = batch.B, d = x_ND.size(1), n_max = token_in_weight_.size(1);
  const bool train = is_training();
  if (batch.keep_N1.defined()) h_ND = h_ND * batch.keep_N1;
  // Both token GEMMs act on the (n, B*d) view of the sequence-major rows: no transposes.
  const torch::Tensor w1_TN = n == n_max ? token_in_weight_ : token_in_weight_.narrow(1, 0, n);
  const torch::Tensor w2_NT = n == n_max ? token_out_weight_ : token_out_weight_.narrow(0, 0, n);
  const torch::Tensor u_TX =
      torch::gelu(kernels::AddMm(token_in_bias_.unsqueeze(1), w1_TN, h_ND.view({n, B * d})));
  const torch::Tensor y_ND =
      kernels::AddMm(LeadingColumn(token_out_bias_, n), w2_NT, u_TX).view({n * B, d});
  const auto [x1_ND, g_ND] =
      channel_norm_->AddAndNormalize({x_ND, kernels::Dropout(y_ND, dropout_, train)});
  return {x1_ND, kernels::Dropout(channel_out_(LinearGelu(channel_in_, g_ND)), dropout_, train)};
}

// The arch table's constructor (arch.cc).
std::shared_ptr<EncoderBlockImpl> MakeMixerBlock(const EncoderConfig& config) {
  return std::make_shared<MixerBlockImpl>(config);
}

}  // namespace gmlp::model
