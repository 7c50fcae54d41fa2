// The gMLP/aMLP reference block (model/gmlp.h's equations), for the parity tests.
#include "tests/model_reference.h"

namespace gmlp::model::testing {
namespace {

torch::Tensor RefGmlpBlock(const torch::Tensor& x, const torch::Tensor& keep_Bn, const Params& p,
                           const std::string& pre, const EncoderConfig& c) {
  const int64_t B = x.size(0), n = x.size(1);
  const double eps = c.layer_norm_eps;
  const torch::Tensor h = RefNorm(x, p, pre + "norm", eps);
  torch::Tensor z, z1, z2;
  if (c.sgu == "split") {
    z1 = RefGelu(RefDense(h, p, pre + "in_z1"));
    z2 = RefGelu(RefDense(h, p, pre + "in_z2"));
    z = torch::cat({z1, z2}, -1);
  } else {
    z = z2 = RefGelu(RefDense(h, p, pre + "in_z"));
  }
  const torch::Tensor v = RefNorm(z2, p, pre + "sgu_norm", eps) * keep_Bn.unsqueeze(-1);
  const torch::Tensor w = p[pre + "spatial_weight"].slice(0, 0, n).slice(1, 0, n);
  torch::Tensor gate =
      torch::einsum("ij,bjc->bic", {w, v}) + p[pre + "spatial_bias"].slice(0, 0, n).view({1, n, 1});
  if (c.arch == "amlp") {
    const torch::Tensor qkv = RefDense(c.attn_input == "block" ? h : z, p, pre + "attn_qkv");
    const int64_t a = c.attn_size;
    auto head = [&](int i) { return qkv.slice(-1, i * a, (i + 1) * a).view({B, n, 1, a}); };
    const torch::Tensor o = RefAttention(head(0), head(1), head(2), keep_Bn).view({B, n, a});
    gate = gate + RefDense(o, p, pre + "attn_out");
  }
  torch::Tensor s;
  if (c.sgu == "split") s = z1 * gate;
  if (c.sgu == "multiplicative") s = z * gate;
  if (c.sgu == "additive") s = z + gate;
  if (c.sgu == "linear") s = gate;
  return x + RefDense(s, p, pre + "out");
}

}  // namespace

GMLP_REGISTER_REFERENCE_BLOCK("gmlp", RefGmlpBlock);
GMLP_REGISTER_REFERENCE_BLOCK("amlp", RefGmlpBlock);

}  // namespace gmlp::model::testing
