// The token-mixing MLP reference block (model/mixer.h), for the parity tests.
#include "tests/model_reference.h"

namespace gmlp::model::testing {
namespace {

torch::Tensor RefMixerBlock(const torch::Tensor& x, const torch::Tensor& keep_Bn, const Params& p,
                            const std::string& pre, const EncoderConfig& c) {
  const int64_t n = x.size(1);
  const double eps = c.layer_norm_eps;
  const torch::Tensor h = RefNorm(x, p, pre + "token_norm", eps) * keep_Bn.unsqueeze(-1);
  const torch::Tensor u =
      RefGelu(torch::einsum("tj,bjc->btc", {p[pre + "token_in_weight"].slice(1, 0, n), h}) +
              p[pre + "token_in_bias"].view({1, -1, 1}));
  const torch::Tensor y =
      torch::einsum("it,btc->bic", {p[pre + "token_out_weight"].slice(0, 0, n), u}) +
      p[pre + "token_out_bias"].slice(0, 0, n).view({1, n, 1});
  const torch::Tensor x1 = x + y;
  const torch::Tensor ch =
      RefDense(RefGelu(RefDense(RefNorm(x1, p, pre + "channel_norm", eps), p, pre + "channel_in")), p,
            pre + "channel_out");
  return x1 + ch;
}

}  // namespace

GMLP_REGISTER_REFERENCE_BLOCK("mixer", RefMixerBlock);

}  // namespace gmlp::model::testing
