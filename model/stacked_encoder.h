// StackedEncoderImpl<Block>: the one encoder body every architecture shares. Embeddings (token +
// segment, plus learned positions when Block::kPositionEmbeddings) -> blocks.<i> (Block) ->
// final_norm (when Block::HasFinalNorm(config)). An architecture only writes its block.
//
// A Block is a torch::nn::Module with
//   explicit Block(const EncoderConfig&);
//   torch::Tensor forward(const torch::Tensor& x_ND, const SeqBatch& batch);  // (n*B, d)
//   static constexpr bool kPositionEmbeddings;
//   static bool HasFinalNorm(const EncoderConfig&);
// Its arch-table row (model/arch.h) adds the block file's ArchFormulas.
//
// Shape legend: B batch, n length, d d_model, N = n*B rows of the sequence-major layout.
#ifndef GMLP_MODEL_STACKED_ENCODER_H_
#define GMLP_MODEL_STACKED_ENCODER_H_

#include <torch/torch.h>

#include <memory>

#include "model/config.h"
#include "model/embeddings.h"
#include "model/encoder.h"
#include "model/layers.h"

namespace gmlp::model {

template <typename Block>
class StackedEncoderImpl : public EncoderImpl {
 public:
  // Registers embeddings, blocks and final_norm in that order (parameter names and the order
  // of random initialization are part of the checkpoint format).
  explicit StackedEncoderImpl(const EncoderConfig& config) : EncoderImpl(config) {
    embeddings_ = register_module("embeddings", Embeddings(config, Block::kPositionEmbeddings));
    blocks_ = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < config.n_layers; ++i) {
      blocks_->push_back(std::make_shared<Block>(config));
    }
    if (Block::HasFinalNorm(config)) {
      final_norm_ = register_module("final_norm", LayerNorm(config.d_model, config.layer_norm_eps));
    }
  }

  torch::Tensor forward(const EncoderInput& input) override {
    SeqBatch batch;
    const torch::Tensor x_ND = final_norm(Encode(input, &batch));
    return SeqMajorToBatchMajor(x_ND, batch.n, batch.B);
  }

  torch::Tensor forward_features(const EncoderInput& input) override {
    SeqBatch batch;
    const torch::Tensor x_ND = Encode(input, &batch);
    return SeqMajorToBatchMajor(x_ND, batch.n, batch.B);
  }

  torch::Tensor final_norm(const torch::Tensor& hidden_XD) override {
    return final_norm_ ? final_norm_(hidden_XD) : hidden_XD;
  }

  torch::Tensor token_embedding_weight() override { return embeddings_->token_weight(); }

 private:
  // (B, n) ids -> (n*B, d) hidden states after the last block.
  torch::Tensor Encode(const EncoderInput& input, SeqBatch* batch) {
    *batch = MakeSeqBatch(input, config().max_seq_len, embeddings_->token_weight().scalar_type());
    torch::Tensor x_ND = embeddings_->forward(input, *batch);
    for (const auto& block : *blocks_) x_ND = block->as<Block>()->forward(x_ND, *batch);
    return x_ND;
  }

  Embeddings embeddings_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  LayerNorm final_norm_{nullptr};  // absent when Block::HasFinalNorm is false
};

}  // namespace gmlp::model

#endif  // GMLP_MODEL_STACKED_ENCODER_H_
