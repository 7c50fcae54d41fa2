// The FNet reference block (model/fnet.h), for the parity tests: the Fourier mixing as the real
// part of torch::fft::fft2 (complex arithmetic, where the module uses real DFT matrices), over
// each sequence's real length.
#include <torch/fft.h>

#include "tests/model_reference.h"

namespace gmlp::model::testing {
namespace {

torch::Tensor RefFnetBlock(const torch::Tensor& x, const torch::Tensor& keep_Bn, const Params& p,
                           const std::string& pre, const EncoderConfig& c) {
  const double eps = c.layer_norm_eps;
  torch::Tensor mix = torch::zeros_like(x);
  for (int64_t b = 0; b < x.size(0); ++b) {
    const int64_t length = keep_Bn[b].sum().item<int64_t>();
    mix[b].narrow(0, 0, length).copy_(torch::real(torch::fft::fft2(x[b].narrow(0, 0, length))));
  }
  const torch::Tensor y = RefNorm(x + mix, p, pre + "mix_norm", eps);
  const torch::Tensor ffn = RefDense(RefGelu(RefDense(y, p, pre + "ffn_in")), p, pre + "ffn_out");
  return RefNorm(y + ffn, p, pre + "ffn_norm", eps);
}

}  // namespace

GMLP_REGISTER_REFERENCE_BLOCK("fnet", RefFnetBlock);

}  // namespace gmlp::model::testing
