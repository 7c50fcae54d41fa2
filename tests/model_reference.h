// Independent references of the encoders, written with plain tensor ops in the batch-major
// (B, n, d) layout (hand-written LayerNorm and erf-GELU, explicit head splits, einsum for the
// mixing over positions, -inf masked softmax), so they share no code path with the modules,
// which run sequence-major on kernels/ops.h. Each architecture's reference block lives in its
// own tests/model_reference_<arch>.cc and registers itself by arch name; the parity tests
// (model_parity_test.cc) look it up, and fail for an arch of the table that registered none.
#ifndef GMLP_TESTS_MODEL_REFERENCE_H_
#define GMLP_TESTS_MODEL_REFERENCE_H_

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "model/config.h"

namespace gmlp::model::testing {

using Params = torch::OrderedDict<std::string, torch::Tensor>;

// One block of c.arch on x (B, n, d), keep_Bn (B, n) bool (true at real tokens), from the
// block's parameters `p` (module names, after the prefix `pre`, e.g. "blocks.0.").
using ReferenceBlock = torch::Tensor (*)(const torch::Tensor& x, const torch::Tensor& keep_Bn,
                                         const Params& p, const std::string& pre,
                                         const EncoderConfig& c);

// Registers `block` as the reference of `arch` (at static initialization: see
// GMLP_REGISTER_REFERENCE_BLOCK); returns true.
bool RegisterReferenceBlock(const std::string& arch, ReferenceBlock block);
// The reference registered for `arch`, or nullptr.
ReferenceBlock FindReferenceBlock(const std::string& arch);

#define GMLP_REFERENCE_CONCAT_(a, b) a##b
#define GMLP_REFERENCE_NAME_(line) GMLP_REFERENCE_CONCAT_(gmlp_reference_registered_, line)
#define GMLP_REGISTER_REFERENCE_BLOCK(arch, block)                    \
  static const bool GMLP_REFERENCE_NAME_(__LINE__) [[maybe_unused]] = \
      ::gmlp::model::testing::RegisterReferenceBlock(arch, block)

inline torch::Tensor RefLayerNorm(const torch::Tensor& x, const torch::Tensor& w,
                                  const torch::Tensor& b, double eps) {
  const torch::Tensor mean = x.mean(-1, /*keepdim=*/true);
  const torch::Tensor var = (x - mean).pow(2).mean(-1, /*keepdim=*/true);
  return (x - mean) / torch::sqrt(var + eps) * w + b;
}

inline torch::Tensor RefGelu(const torch::Tensor& x) {
  return 0.5 * x * (1.0 + torch::erf(x / M_SQRT2));
}

inline torch::Tensor RefDense(const torch::Tensor& x, const Params& p, const std::string& name) {
  return torch::matmul(x, p[name + ".weight"].t()) + p[name + ".bias"];
}

inline torch::Tensor RefNorm(const torch::Tensor& x, const Params& p, const std::string& name,
                             double eps) {
  return RefLayerNorm(x, p[name + ".weight"], p[name + ".bias"], eps);
}

// Single- or multi-head softmax attention over (B, n, H, k) q/k/v; keep_Bn masks keys. With
// `slopes` (one per head), ALiBi: score(i, j) of head h gets -slopes[h] * |i - j|.
inline torch::Tensor RefAttention(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v, const torch::Tensor& keep_Bn,
                                  const std::vector<double>& slopes = {}) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  torch::Tensor scores = torch::einsum("bihc,bjhc->bhij", {q, k}) * scale;
  for (size_t h = 0; h < slopes.size(); ++h) {
    for (int64_t i = 0; i < q.size(1); ++i) {
      for (int64_t j = 0; j < q.size(1); ++j) {
        scores.select(1, h).select(1, i).select(1, j) -= slopes[h] * std::abs(i - j);
      }
    }
  }
  scores = scores.masked_fill(keep_Bn.logical_not().view({keep_Bn.size(0), 1, 1, -1}),
                              -std::numeric_limits<double>::infinity());
  const torch::Tensor probs = torch::exp(scores - std::get<0>(scores.max(-1, true)));
  return torch::einsum("bhij,bjhc->bihc", {probs / probs.sum(-1, true), v});
}

}  // namespace gmlp::model::testing

#endif  // GMLP_TESTS_MODEL_REFERENCE_H_
