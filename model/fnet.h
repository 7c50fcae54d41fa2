// FNet (Lee-Thorp, Ainslie, Eckstein, Ontañón 2021, "FNet: Mixing Tokens with Fourier
// Transforms"): the Transformer with its self-attention replaced by a parameter-free mixing, the
// real part of a 2-D discrete Fourier transform over the sequence and hidden axes. The
// parameter-free token-mixing baseline of this line of work.
//
// Shape legend: B batch, n length (<= max_seq_len), d d_model, f d_ffn, N = n*B rows of the
// sequence-major layout (layers.h), L_b the real length of sequence b.
//
// Block (post-LN, as BERT and the paper):
//   x = LN(x + Re(DFT_seq(DFT_hidden(x))))
//   x = LN(x + Proj_d(GELU(Proj_f(x))))
// With C_m[i, j] = cos(2 pi i j / m), S_m[i, j] = sin(2 pi i j / m) (symmetric), the real part
// of F_n X F_d for a real (n, d) X is C_n X C_d - S_n X S_d: two products over the hidden axis,
// two over the sequence axis, no complex numbers (the paper also uses the DFT matrices on TPUs
// for short sequences).
//
// Padding: the sequence transform of sequence b runs over its own real length L_b (the DFT of
// the L_b real rows), so outputs at real positions do not depend on how much padding follows, as
// for every encoder here. (The public FNet transforms the padded length.) Learned position
// embeddings, as the paper's; no final LayerNorm (post-LN).
#ifndef GMLP_MODEL_FNET_H_
#define GMLP_MODEL_FNET_H_

#include <torch/torch.h>

#include "model/arch.h"
#include "model/stacked_encoder.h"

namespace gmlp::model {

// Re(DFT_seq(DFT_hidden(x))) of the sequence-major rows x (N, d): over the sequence axis with
// length n, or with each sequence's real length where `batch` has padding (its padded rows come
// out zero).
torch::Tensor FourierMix(const torch::Tensor& x_ND, const SeqBatch& batch);

// The FNet row of the arch table (model/arch.cc) builds its block here; the block class is
// private to fnet.cc. Parameters: mix_norm, ffn_in (d -> f), ffn_out (f -> d), ffn_norm. The mixing
// has none.
std::shared_ptr<EncoderBlockImpl> MakeFnetBlock(const EncoderConfig& config);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_FNET_H_
