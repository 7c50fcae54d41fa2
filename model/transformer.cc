// Transformer (BERT) blocks and encoder (see transformer.h).
#include "model/transformer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/ops.h"

namespace gmlp::model {

// The block of the arch-table row (its parameters: transformer.h).
class TransformerBlockImpl : public EncoderBlockImpl {
 public:
  explicit TransformerBlockImpl(const EncoderConfig& config);
  Residual forward(const Residual& in, const SeqBatch& batch) override;
  // softmax(q k^T / sqrt(k) [+ ALiBi bias] + padding bias) v, heads concatenated, then
  // attn_out. h_ND is the (already normalized, for pre-LN) block input. Under CPU bf16 autocast
  // the part between the two projections is one kernel (attention_bf16.h).
  torch::Tensor SelfAttention(const torch::Tensor& h_ND, const SeqBatch& batch);

 private:
  int64_t n_heads_;
  double dropout_;
  bool pre_ln_;
  torch::Tensor alibi_slopes_H11_;  // (H, 1, 1); undefined for learned positions
  Dense attn_qkv_{nullptr}, attn_out_{nullptr};
  LayerNorm attn_norm_{nullptr};
  Dense ffn_in_{nullptr}, ffn_out_{nullptr};
  LayerNorm ffn_norm_{nullptr};
};

TransformerBlockImpl::TransformerBlockImpl(const EncoderConfig& config)
    : n_heads_(config.n_heads), dropout_(config.dropout), pre_ln_(config.pre_ln) {
  const int64_t d = config.d_model, f = config.d_ffn;
  const double std = config.init_std;
  attn_qkv_ = register_module("attn_qkv", Dense(d, 3 * d, std));
  attn_out_ = register_module("attn_out", Dense(d, d, std));
  attn_norm_ = register_module(
      "attn_norm", LayerNorm(d, config.layer_norm_eps, /*feeds_matmuls=*/config.pre_ln));
  ffn_in_ = register_module("ffn_in", Dense(d, f, std));
  ffn_out_ = register_module("ffn_out", Dense(f, d, std));
  ffn_norm_ = register_module("ffn_norm",
                              LayerNorm(d, config.layer_norm_eps, /*feeds_matmuls=*/config.pre_ln));
  if (config.position == "alibi") {
    const std::vector<double> slopes = AlibiSlopes(n_heads_);
    alibi_slopes_H11_ = register_buffer(
        "alibi_slopes", torch::tensor(slopes, torch::kFloat).view({n_heads_, 1, 1}));
  }
}

std::vector<double> AlibiSlopes(int64_t n_heads) {
  int64_t pow2 = 1;
  while (pow2 * 2 <= n_heads) pow2 *= 2;
  auto geometric = [](int64_t count) {
    std::vector<double> out;
    const double ratio = std::pow(2.0, -8.0 / static_cast<double>(count));
    for (int64_t i = 1; i <= count; ++i) out.push_back(std::pow(ratio, static_cast<double>(i)));
    return out;
  };
  std::vector<double> slopes = geometric(pow2);
  const std::vector<double> finer = geometric(2 * pow2);
  for (int64_t i = 0; static_cast<int64_t>(slopes.size()) < n_heads; i += 2) {
    slopes.push_back(finer[i]);
  }
  return slopes;
}

torch::Tensor TransformerBlockImpl::SelfAttention(const torch::Tensor& h_ND,
                                                  const SeqBatch& batch) {
  const int64_t n = batch.n, B = batch.B;
  // ALiBi: head h's scores get -slope_h * |i - j| (float, (H, n, n)).
  torch::Tensor alibi_Hnn;
  if (alibi_slopes_H11_.defined()) {
    const torch::Tensor pos_n = torch::arange(n, alibi_slopes_H11_.options());
    alibi_Hnn = -(alibi_slopes_H11_ * (pos_n.unsqueeze(0) - pos_n.unsqueeze(1)).abs());
  }
  return attn_out_(kernels::Attention(attn_qkv_(h_ND), n, B, n_heads_, batch.key_bias_B1N,
                                      alibi_Hnn, dropout_, is_training()));
}

Residual TransformerBlockImpl::forward(const Residual& in, const SeqBatch& batch) {
  auto ffn = [this](const torch::Tensor& h_ND) { return ffn_out_(LinearGelu(ffn_in_, h_ND)); };
  const bool train = is_training();
  if (pre_ln_) {
    const auto [x_ND, h_ND] = attn_norm_->AddAndNormalize(in);
    const torch::Tensor attn_ND = kernels::Dropout(SelfAttention(h_ND, batch), dropout_, train);
    const auto [y_ND, g_ND] = ffn_norm_->AddAndNormalize({x_ND, attn_ND});
    return {y_ND, kernels::Dropout(ffn(g_ND), dropout_, train)};
  }
  // Post-LN: the norms read the sums (in one pass with the add where AddAndNormalize can), and
  // only their outputs go on.
  const torch::Tensor x_ND = in.Sum();
  const torch::Tensor y_ND =
      attn_norm_
          ->AddAndNormalize({x_ND, kernels::Dropout(SelfAttention(x_ND, batch), dropout_, train)})
          .second;
  return {ffn_norm_->AddAndNormalize({y_ND, kernels::Dropout(ffn(y_ND), dropout_, train)}).second,
          {}};
}

// The arch table's constructor (arch.cc).
std::shared_ptr<EncoderBlockImpl> MakeTransformerBlock(const EncoderConfig& config) {
  return std::make_shared<TransformerBlockImpl>(config);
}

}  // namespace gmlp::model
