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

// ALiBi's head slopes (Press et al. 2022, their reference code): for H a power of two the
// geometric sequence 2^(-8/H), 2^(-16/H), ..., 2^(-8); otherwise those of the largest power of two
// below H, then every other slope of twice that many.
std::vector<double> AlibiSlopes(int64_t n_heads);

// The Transformer row of the arch table (model/arch.cc) builds its block here; the block class is
// private to transformer.cc. Parameters: attn_qkv (d -> 3d, rows [q; k; v]), attn_out (d -> d),
// attn_norm, ffn_in (d -> f), ffn_out (f -> d), ffn_norm.
std::shared_ptr<EncoderBlockImpl> MakeTransformerBlock(const EncoderConfig& config);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_TRANSFORMER_H_
