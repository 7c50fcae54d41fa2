// The shared encoder body (see stacked_encoder.h).
#include "model/stacked_encoder.h"

namespace gmlp::model {

StackedEncoderImpl::StackedEncoderImpl(const EncoderConfig& config, const BlockSpec& block)
    : EncoderImpl(config) {
  embeddings_ =
      register_module("embeddings", Embeddings(config, block.position_embeddings(config)));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.n_layers; ++i) blocks_->push_back(block.make(config));
  if (block.final_norm(config)) {
    final_norm_ = register_module("final_norm", LayerNorm(config.d_model, config.layer_norm_eps));
  }
}

torch::Tensor StackedEncoderImpl::forward(const EncoderInput& input) {
  SeqBatch batch;
  const torch::Tensor x_ND = final_norm(Encode(input, &batch));
  return SeqMajorToBatchMajor(x_ND, batch.n, batch.B);
}

torch::Tensor StackedEncoderImpl::forward_features(const EncoderInput& input) {
  SeqBatch batch;
  const torch::Tensor x_ND = Encode(input, &batch);
  return SeqMajorToBatchMajor(x_ND, batch.n, batch.B);
}

torch::Tensor StackedEncoderImpl::final_norm(const torch::Tensor& hidden_XD) {
  return final_norm_ ? final_norm_(hidden_XD) : hidden_XD;
}

torch::Tensor StackedEncoderImpl::Encode(const EncoderInput& input, SeqBatch* batch) {
  *batch = MakeSeqBatch(input, config().max_seq_len, embeddings_->token_weight().scalar_type());
  Residual r{embeddings_->forward(input, *batch), {}};
  for (const auto& block : *blocks_) r = block->as<EncoderBlockImpl>()->forward(r, *batch);
  return r.Sum();
}

}  // namespace gmlp::model
