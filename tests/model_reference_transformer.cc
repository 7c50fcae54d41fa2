// The Transformer reference block (BERT, pre-LN and ALiBi variants), for the parity tests.
#include "tests/model_reference.h"

namespace gmlp::model::testing {
namespace {

torch::Tensor RefTransformerBlock(const torch::Tensor& x, const torch::Tensor& keep_Bn,
                                  const Params& p, const std::string& pre, const EncoderConfig& c) {
  const int64_t B = x.size(0), n = x.size(1), d = c.d_model, H = c.n_heads;
  const double eps = c.layer_norm_eps;
  auto attention = [&](const torch::Tensor& h) {
    const torch::Tensor qkv = RefDense(h, p, pre + "attn_qkv");
    auto part = [&](int i) { return qkv.slice(-1, i * d, (i + 1) * d).view({B, n, H, d / H}); };
    // ALiBi's slopes for the tiny configs' 2 heads, written out: 2^-4 and 2^-8.
    std::vector<double> slopes;
    if (c.position == "alibi") slopes = {1.0 / 16, 1.0 / 256};
    const torch::Tensor o =
        RefAttention(part(0), part(1), part(2), keep_Bn, slopes).reshape({B, n, d});
    return RefDense(o, p, pre + "attn_out");
  };
  auto ffn = [&](const torch::Tensor& h) {
    return RefDense(RefGelu(RefDense(h, p, pre + "ffn_in")), p, pre + "ffn_out");
  };
  if (c.pre_ln) {
    const torch::Tensor y = x + attention(RefNorm(x, p, pre + "attn_norm", eps));
    return y + ffn(RefNorm(y, p, pre + "ffn_norm", eps));
  }
  const torch::Tensor y = RefNorm(x + attention(x), p, pre + "attn_norm", eps);
  return RefNorm(y + ffn(y), p, pre + "ffn_norm", eps);
}

}  // namespace

GMLP_REGISTER_REFERENCE_BLOCK("transformer", RefTransformerBlock);

}  // namespace gmlp::model::testing
