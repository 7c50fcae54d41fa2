// The Transformer (BERT) encoder: token + segment + learned position embeddings, embedding
// LayerNorm, blocks of multi-head self-attention with a padding mask and a GELU feed-forward,
// post-LN as in BERT (pre-LN by config.pre_ln, then with a final LayerNorm).
//
// Shape legend: B batch, n length, d d_model, h n_heads, k = d / h head size, f d_ffn,
// N = n*B rows of the sequence-major layout (see layers.h).
#ifndef GMLP_MODEL_TRANSFORMER_H_
#define GMLP_MODEL_TRANSFORMER_H_

#include <torch/torch.h>

#include "model/config.h"
#include "model/embeddings.h"
#include "model/encoder.h"
#include "model/layers.h"

namespace gmlp::model {

// Parameters: attn_qkv (d -> 3d, rows [q; k; v]), attn_out (d -> d), attn_norm, ffn_in (d -> f),
// ffn_out (f -> d), ffn_norm.
class TransformerBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerBlockImpl(const EncoderConfig& config);
  // x_ND: (n*B, d) -> (n*B, d).
  torch::Tensor forward(const torch::Tensor& x_ND, const SeqBatch& batch);
  // softmax(q k^T / sqrt(k) + padding bias) v, heads concatenated, then attn_out. h_ND is the
  // (already normalized, for pre-LN) block input.
  torch::Tensor SelfAttention(const torch::Tensor& h_ND, const SeqBatch& batch);

 private:
  int64_t n_heads_;
  double dropout_;
  bool pre_ln_;
  torch::nn::Linear attn_qkv_{nullptr}, attn_out_{nullptr};
  LayerNorm attn_norm_{nullptr};
  torch::nn::Linear ffn_in_{nullptr}, ffn_out_{nullptr};
  LayerNorm ffn_norm_{nullptr};
};
TORCH_MODULE(TransformerBlock);

// Embeddings (with positions) -> blocks.<i> [-> final_norm when pre-LN].
class TransformerEncoderImpl : public EncoderImpl {
 public:
  explicit TransformerEncoderImpl(const EncoderConfig& config);
  torch::Tensor forward(const EncoderInput& input) override;
  torch::Tensor forward_features(const EncoderInput& input) override;
  torch::Tensor final_norm(const torch::Tensor& hidden_XD) override;
  torch::Tensor token_embedding_weight() override { return embeddings_->token_weight(); }

 private:
  torch::Tensor Encode(const EncoderInput& input, SeqBatch* batch);

  Embeddings embeddings_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  LayerNorm final_norm_{nullptr};  // pre-LN only
};

}  // namespace gmlp::model

#endif  // GMLP_MODEL_TRANSFORMER_H_
