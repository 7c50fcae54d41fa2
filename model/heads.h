// Task heads over an encoder: the MLM model used in pretraining (head computed only at the
// masked positions) and a sequence classifier / regressor used in finetuning.
#ifndef GMLP_MODEL_HEADS_H_
#define GMLP_MODEL_HEADS_H_

#include <torch/torch.h>

#include <memory>

#include "model/encoder.h"
#include "model/layers.h"

namespace gmlp::model {

// BERT's MLM head: dense(d, d), GELU, LayerNorm, then a decoder tied to the token embedding
// (V, d) plus a free bias (V).
class MlmHeadImpl : public torch::nn::Module {
 public:
  MlmHeadImpl(const EncoderConfig& config, torch::Tensor tied_embedding_VD);
  torch::Tensor forward(torch::Tensor hidden_MD);  // (M, d) -> (M, V) logits

 private:
  // Not registered here: it is the encoder's parameter (it shares storage, so the encoder's
  // to()/load updates reach it).
  torch::Tensor tied_embedding_VD_;
  Dense dense_{nullptr};
  LayerNorm norm_{nullptr};
  torch::Tensor bias_;
};
TORCH_MODULE(MlmHead);

// Encoder (registered as "encoder") + MLM head (registered as "mlm_head").
class MlmModelImpl : public torch::nn::Module {
 public:
  explicit MlmModelImpl(const EncoderConfig& config);
  // masked_index: (M,) int64 flat indices b * n + i of the positions to predict.
  // Returns (M, V) logits; the head runs only on those M rows.
  torch::Tensor forward(const EncoderInput& input, torch::Tensor masked_index);
  const std::shared_ptr<EncoderImpl>& encoder() const { return encoder_; }

 private:
  std::shared_ptr<EncoderImpl> encoder_;
  MlmHead head_{nullptr};
};
TORCH_MODULE(MlmModel);

// BERT-style pooler (dense + tanh on the [CLS] position), dropout, linear to `num_outputs`
// (number of classes, or 1 for regression). The encoder is registered as "encoder".
class SequenceClassifierImpl : public torch::nn::Module {
 public:
  SequenceClassifierImpl(std::shared_ptr<EncoderImpl> encoder, int64_t num_outputs);
  torch::Tensor forward(const EncoderInput& input);  // (B, num_outputs)
  const std::shared_ptr<EncoderImpl>& encoder() const { return encoder_; }

 private:
  std::shared_ptr<EncoderImpl> encoder_;
  Dense pooler_{nullptr};
  double dropout_ = 0.0;
  Dense out_{nullptr};
};
TORCH_MODULE(SequenceClassifier);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_HEADS_H_
