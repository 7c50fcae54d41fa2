// The Transformer (BERT) encoder: token + segment + learned position embeddings, embedding
// LayerNorm, blocks of multi-head self-attention with a padding mask and a GELU feed-forward,
// post-LN as in BERT (pre-LN by config.pre_ln, then with a final LayerNorm). With
// config.position "alibi" there are no position embeddings: head h's scores get
// -AlibiSlopes(H)[h] * |i - j| instead.
//
// Shape legend: B batch, n length, d d_model, h n_heads, k = d / h head size, f d_ffn,
// N = n*B rows of the sequence-major layout (see layers.h).
#ifndef GMLP_MODEL_TRANSFORMER_H_
#define GMLP_MODEL_TRANSFORMER_H_

#include <torch/torch.h>

#include <vector>

#include "model/arch.h"
#include "model/stacked_encoder.h"

namespace gmlp::model {

// Parameters: attn_qkv (d -> 3d, rows [q; k; v]), attn_out (d -> d), attn_norm, ffn_in (d -> f),
// ffn_out (f -> d), ffn_norm.
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
TORCH_MODULE(TransformerBlock);

// ALiBi's head slopes (Press et al. 2022, their reference code): for H a power of two the
// geometric sequence 2^(-8/H), 2^(-16/H), ..., 2^(-8); otherwise those of the largest power of two
// below H, then every other slope of twice that many.
std::vector<double> AlibiSlopes(int64_t n_heads);

// The constructor of the Transformer row of the arch table (model/arch.cc).
std::shared_ptr<EncoderBlockImpl> MakeTransformerBlock(const EncoderConfig& config);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_TRANSFORMER_H_
