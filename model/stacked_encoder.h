// The one encoder body every architecture shares, and the block interface it stacks:
// embeddings (token + segment, plus learned positions when the arch's BlockSpec says so) ->
// blocks.<i> -> final_norm (when BlockSpec::final_norm says so). An architecture only writes its
// block (an EncoderBlockImpl) and the BlockSpec of its arch-table row (model/arch.h).
//
// Shape legend: B batch, n length, d d_model, N = n*B rows of the sequence-major layout.
#ifndef GMLP_MODEL_STACKED_ENCODER_H_
#define GMLP_MODEL_STACKED_ENCODER_H_

#include <torch/torch.h>

#include <memory>

#include "model/arch.h"
#include "model/config.h"
#include "model/embeddings.h"
#include "model/encoder.h"
#include "model/layers.h"

namespace gmlp::model {

// One block of an encoder, built from the EncoderConfig alone.
class EncoderBlockImpl : public torch::nn::Module {
 public:
  // The residual stream in -> out, (n*B, d) on the sequence-major layout of `batch` (layers.h):
  // the block's output is out.Sum(). A pre-LN block reads in through its first LayerNorm's
  // AddAndNormalize and leaves its own residual add pending in out.delta for the next block's;
  // any block may instead read in.Sum() and return {y, {}}.
  virtual Residual forward(const Residual& in, const SeqBatch& batch) = 0;
};

class StackedEncoderImpl : public EncoderImpl {
 public:
  // Registers embeddings, blocks and final_norm in that order (parameter names and the order
  // of random initialization are part of the checkpoint format). `config` has passed Validate();
  // `block` is its arch's.
  StackedEncoderImpl(const EncoderConfig& config, const BlockSpec& block);

  torch::Tensor forward(const EncoderInput& input) override;
  torch::Tensor forward_features(const EncoderInput& input) override;
  torch::Tensor final_norm(const torch::Tensor& hidden_XD) override;
  torch::Tensor token_embedding_weight() override { return embeddings_->token_weight(); }

 private:
  // (B, n) ids -> (n*B, d) hidden states after the last block.
  torch::Tensor Encode(const EncoderInput& input, SeqBatch* batch);

  Embeddings embeddings_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  LayerNorm final_norm_{nullptr};  // absent when the BlockSpec's final_norm is false
};

}  // namespace gmlp::model

#endif  // GMLP_MODEL_STACKED_ENCODER_H_
