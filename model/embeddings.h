// BERT-style input embeddings in the sequence-major layout: token + segment (+ learned
// position, Transformer only; gMLP has none, its spatial projection knows positions),
// LayerNorm, dropout. Shapes: B batch, n length, d d_model, V vocab, N = n*B rows.
#ifndef GMLP_MODEL_EMBEDDINGS_H_
#define GMLP_MODEL_EMBEDDINGS_H_

#include <torch/torch.h>

#include "model/config.h"
#include "model/encoder.h"
#include "model/layers.h"

namespace gmlp::model {

// Parameters: token.weight (V, d), segment.weight (type_vocab_size, d),
// [position.weight (max_seq_len, d)], norm.{weight,bias} (d). Tables ~ N(0, init_std^2).
class EmbeddingsImpl : public torch::nn::Module {
 public:
  EmbeddingsImpl(const EncoderConfig& config, bool with_position);
  // Returns x_ND: (n*B, d) sequence-major.
  torch::Tensor forward(const EncoderInput& input, const SeqBatch& batch);

  torch::Tensor token_weight() const { return token_->weight; }

 private:
  double dropout_;
  torch::nn::Embedding token_{nullptr};
  torch::nn::Embedding segment_{nullptr};
  torch::nn::Embedding position_{nullptr};
  LayerNorm norm_{nullptr};
};
TORCH_MODULE(Embeddings);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_EMBEDDINGS_H_
