// gMLP and aMLP encoders ("Pay Attention to MLPs", Liu, Dai, So, Le 2021). aMLP is gMLP with
// the tiny attention switched on (a width attn_size > 0, which the aMLP row passes), not a copy.
//
// Shape legend: B batch, n length (<= max_seq_len), d d_model, f d_ffn, g gate width (f/2 for
// the split SGU, f otherwise), a attn_size, N = n*B rows of the sequence-major layout.
//
// Block (paper Fig. 1):  x + V(s(GELU(U(LN(x)))))
// SGU s(Z) by config.sgu, with W (n x n) mixing positions and b (n):
//   split (default)  s = Z1 * (W LN(Z2) + b [+ attn])   Z1, Z2 the channel halves of Z
//   multiplicative   s = Z  * (W LN(Z)  + b [+ attn])
//   additive         s = Z  + (W LN(Z)  + b [+ attn])
//   linear           s =       W LN(Z)  + b [+ attn]
// W ~ U(-sgu_init_eps / n_max, sgu_init_eps / n_max) (paper: "near-zero values", eps = 1e-3),
// b = 1, so at initialization each block is close to a plain gated FFN.
// aMLP: attn = Proj_g(softmax(q k^T / sqrt(a)) v), q k v = Proj_3a(LN(x)) ("block", the
// paper) or of the whole Z ("expanded", width f for every variant), one head, padded keys
// masked.
//
// Padding: padded rows of LN(Z2) are zeroed before the spatial projection (and padded keys
// are masked in the tiny attention), so real positions never see padding. The public ports
// mix padding in; here outputs at real positions do not depend on how much padding follows.
#ifndef GMLP_MODEL_GMLP_H_
#define GMLP_MODEL_GMLP_H_

#include <torch/torch.h>

#include "model/arch.h"
#include "model/stacked_encoder.h"

namespace gmlp::model {

// One gMLP/aMLP block. Parameters: norm, in_z1 + in_z2 (split: the two halves of U as two
// separate (g, d) projections, so neither a chunk() copy nor a full-size gradient of a view
// is needed) or in_z (other variants), sgu_norm, spatial_weight (n_max, n_max),
// spatial_bias (n_max), out (g -> d) and, for aMLP, attn_qkv (in -> 3a), attn_out (a -> g).
class GmlpBlockImpl : public EncoderBlockImpl {
 public:
  // attn_size: the tiny attention's width a, 0 for none (gMLP). The arch table's rows pass it:
  // 0 for gmlp, config.attn_size for amlp.
  GmlpBlockImpl(const EncoderConfig& config, int64_t attn_size);
  Residual forward(const Residual& in, const SeqBatch& batch) override;

  // W[:n,:n] @ v + b for v = LayerNorm(Z2) (N, g) with its padded rows zeroed: the spatial
  // projection on the sequence-major tensor, as one GEMM on its (n, B*g) view with the bias
  // folded in.
  torch::Tensor SpatialProjection(torch::Tensor v_NG, const SeqBatch& batch);
  // The tiny attention of aMLP from its projected queries, keys and values (N, 3a) -> (N, g).
  torch::Tensor TinyAttention(const torch::Tensor& qkv_N3A, const SeqBatch& batch);

 private:
  EncoderConfig config_;
  bool split_;
  int64_t attn_size_;
  LayerNorm norm_{nullptr};
  Dense in_z1_{nullptr}, in_z2_{nullptr}, in_z_{nullptr};
  LayerNorm sgu_norm_{nullptr};
  torch::Tensor spatial_weight_, spatial_bias_;
  Dense out_{nullptr};
  Dense attn_qkv_{nullptr}, attn_out_{nullptr};
};
TORCH_MODULE(GmlpBlock);

// The constructors of the gMLP and the aMLP rows of the arch table (model/arch.cc): the same
// block, without and with the tiny attention of width config.attn_size.
std::shared_ptr<EncoderBlockImpl> MakeGmlpBlock(const EncoderConfig& config);
std::shared_ptr<EncoderBlockImpl> MakeAmlpBlock(const EncoderConfig& config);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_GMLP_H_
