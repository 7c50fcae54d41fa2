// The encoder interface shared by Transformer, gMLP/aMLP and the token-mixing MLP, plus the
// factory. Shape legend: B batch, n sequence length (<= max_seq_len), d d_model, V vocab.
#ifndef GMLP_MODEL_ENCODER_H_
#define GMLP_MODEL_ENCODER_H_

#include <torch/torch.h>

#include <memory>

#include "model/config.h"

namespace gmlp::model {

struct EncoderInput {
  torch::Tensor input_ids;    // (B, n) int64
  torch::Tensor segment_ids;  // (B, n) int64; undefined = all 0
  torch::Tensor pad_mask;     // (B, n) bool, true at real tokens; undefined = no padding
};

// Every encoder maps token ids to hidden states. Padded positions never influence real ones.
class EncoderImpl : public torch::nn::Module {
 public:
  explicit EncoderImpl(EncoderConfig config) : config_(std::move(config)) {}
  ~EncoderImpl() override = default;

  // Returns (B, n, d). May be a non-contiguous view of the encoder's internal layout.
  virtual torch::Tensor forward(const EncoderInput& input) = 0;
  // forward() without the final position-wise LayerNorm (pre-LN encoders end with one; for a
  // post-LN Transformer it is the identity): forward(x) == final_norm(forward_features(x)).
  // Heads that read only a few positions (masked rows, [CLS]) gather them first and normalize
  // only those rows.
  virtual torch::Tensor forward_features(const EncoderInput& input) = 0;
  // Applies the final position-wise normalization to hidden states of shape (..., d).
  virtual torch::Tensor final_norm(const torch::Tensor& hidden_XD) = 0;
  // (V, d): the token embedding table, tied to the MLM decoder.
  virtual torch::Tensor token_embedding_weight() = 0;

  const EncoderConfig& config() const { return config_; }

 private:
  EncoderConfig config_;
};

// Builds the encoder `config.arch` names. `config` must Validate().
std::shared_ptr<EncoderImpl> MakeEncoder(const EncoderConfig& config);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_ENCODER_H_
