// MLM head, MLM model and sequence classifier (see heads.h).
#include "model/heads.h"

#include "kernels/ops.h"
#include "model/layers.h"

namespace gmlp::model {
namespace {

// Rows (M, d) of hidden_BnD (B, n, d) at flat indices b * n + i, without copying the whole
// tensor: index_select on a 2-D view when the layout allows one (its backward is an
// index_add into one zero buffer), advanced indexing otherwise.
torch::Tensor GatherRows(const torch::Tensor& hidden_BnD, const torch::Tensor& flat_M) {
  const int64_t B = hidden_BnD.size(0), n = hidden_BnD.size(1), d = hidden_BnD.size(2);
  if (hidden_BnD.is_contiguous()) return hidden_BnD.view({B * n, d}).index_select(0, flat_M);
  const torch::Tensor seq_major_nBD = hidden_BnD.transpose(0, 1);
  const torch::Tensor b_M = flat_M.div(n, "floor");
  const torch::Tensor i_M = flat_M - b_M * n;
  if (seq_major_nBD.is_contiguous()) {
    return seq_major_nBD.view({n * B, d}).index_select(0, i_M * B + b_M);
  }
  return hidden_BnD.index({b_M, i_M});
}

}  // namespace

MlmHeadImpl::MlmHeadImpl(const EncoderConfig& config, torch::Tensor tied_embedding_VD)
    : tied_embedding_VD_(std::move(tied_embedding_VD)) {
  TORCH_CHECK(tied_embedding_VD_.dim() == 2 && tied_embedding_VD_.size(0) == config.vocab_size &&
                  tied_embedding_VD_.size(1) == config.d_model,
              "tied embedding must be (vocab_size, d_model)");
  dense_ = register_module("dense", Dense(config.d_model, config.d_model, config.init_std));
  norm_ = register_module("norm", LayerNorm(config.d_model, config.layer_norm_eps));
  bias_ = register_parameter("bias", torch::zeros({config.vocab_size}));
}

torch::Tensor MlmHeadImpl::forward(torch::Tensor hidden_MD) {
  const torch::Tensor h_MD = norm_(LinearGelu(dense_, hidden_MD));
  return kernels::Linear(h_MD, tied_embedding_VD_, bias_);
}

MlmModelImpl::MlmModelImpl(const EncoderConfig& config) {
  encoder_ = register_module("encoder", MakeEncoder(config));
  head_ = register_module("mlm_head", MlmHead(config, encoder_->token_embedding_weight()));
}

torch::Tensor MlmModelImpl::forward(const EncoderInput& input, torch::Tensor masked_index) {
  TORCH_CHECK(masked_index.dim() == 1 && masked_index.scalar_type() == torch::kLong,
              "masked_index must be (M,) int64");
  // The final LayerNorm is position-wise, so it commutes with the gather: normalize M rows,
  // not B*n.
  const torch::Tensor hidden_BnD = encoder_->forward_features(input);
  const torch::Tensor rows_MD = encoder_->final_norm(GatherRows(hidden_BnD, masked_index));
  return head_(rows_MD);
}

SequenceClassifierImpl::SequenceClassifierImpl(std::shared_ptr<EncoderImpl> encoder,
                                               int64_t num_outputs) {
  TORCH_CHECK(encoder != nullptr, "SequenceClassifier needs an encoder");
  TORCH_CHECK(num_outputs >= 1, "num_outputs must be >= 1, got ", num_outputs);
  const EncoderConfig& config = encoder->config();
  encoder_ = register_module("encoder", std::move(encoder));
  pooler_ = register_module("pooler", Dense(config.d_model, config.d_model, config.init_std));
  dropout_ = config.dropout;
  out_ = register_module("out", Dense(config.d_model, num_outputs, config.init_std));
}

torch::Tensor SequenceClassifierImpl::forward(const EncoderInput& input) {
  // Only position 0 is read, so only its row gets the final LayerNorm.
  const torch::Tensor cls_BD = encoder_->final_norm(encoder_->forward_features(input).select(1, 0));
  return out_(kernels::Dropout(torch::tanh(pooler_(cls_BD)), dropout_, is_training()));
}

}  // namespace gmlp::model
