// Input embeddings (see embeddings.h).
#include "model/embeddings.h"

#include "kernels/ops.h"

namespace gmlp::model {
namespace {

torch::nn::Embedding MakeTable(int64_t rows, int64_t d, double std) {
  torch::nn::Embedding table(torch::nn::EmbeddingOptions(rows, d));
  torch::NoGradGuard no_grad;
  table->weight.normal_(0.0, std);
  return table;
}

}  // namespace

EmbeddingsImpl::EmbeddingsImpl(const EncoderConfig& config, bool with_position)
    : dropout_(config.dropout) {
  token_ = register_module("token", MakeTable(config.vocab_size, config.d_model, config.init_std));
  segment_ = register_module("segment",
                             MakeTable(config.type_vocab_size, config.d_model, config.init_std));
  if (with_position) {
    position_ =
        register_module("position", MakeTable(config.max_seq_len, config.d_model, config.init_std));
  }
  norm_ = register_module("norm", LayerNorm(config.d_model, config.layer_norm_eps));
}

torch::Tensor EmbeddingsImpl::forward(const EncoderInput& input, const SeqBatch& batch) {
  const int64_t n = batch.n, B = batch.B;
  // Indexing with the transposed ids yields the sequence-major (n, B, d) directly.
  torch::Tensor x_nBD = torch::embedding(token_->weight, input.input_ids.t());
  if (input.segment_ids.defined()) {
    x_nBD = x_nBD + torch::embedding(segment_->weight, input.segment_ids.t());
  } else {
    x_nBD = x_nBD + segment_->weight[0];
  }
  if (position_) x_nBD = x_nBD + position_->weight.narrow(0, 0, n).unsqueeze(1);
  torch::Tensor x_ND = norm_(x_nBD.view({n * B, -1}));
  return kernels::Dropout(x_ND, dropout_, is_training());
}

}  // namespace gmlp::model
