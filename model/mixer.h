// The token-mixing MLP encoder (MLP-Mixer style, Tolstikhin et al. 2021), the cheap
// attention-free baseline: in each block a two-layer MLP over the sequence axis replaces the
// SGU, then a channel MLP, both pre-LN with residuals.
//
// Shape legend: B batch, n length (<= n_max = max_seq_len), d d_model, f d_ffn,
// t token_mlp_dim, N = n*B rows of the sequence-major layout (see layers.h).
//
// Block:  x += W2[:n, :] GELU(W1[:, :n] LN(x) + b1) + b2[:n]     (mixing over positions)
//         x += Proj_d(GELU(Proj_f(LN(x))))                       (mixing over channels)
// Length-agnostic by slicing W1, W2, b2 to the input length; padding-safe because padded rows
// of LN(x) are zeroed before the token MLP (real positions then never read them).
#ifndef GMLP_MODEL_MIXER_H_
#define GMLP_MODEL_MIXER_H_

#include <torch/torch.h>

#include "model/arch.h"
#include "model/stacked_encoder.h"

namespace gmlp::model {

// The token-mixing MLP row of the arch table (model/arch.cc) builds its block here; the block class
// is private to mixer.cc. Parameters: token_norm, token_in_weight (t, n_max), token_in_bias (t),
// token_out_weight (n_max, t), token_out_bias (n_max), channel_norm, channel_in (d -> f),
// channel_out (f -> d).
std::shared_ptr<EncoderBlockImpl> MakeMixerBlock(const EncoderConfig& config);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_MIXER_H_
