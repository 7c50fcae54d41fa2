// Building blocks shared by the encoders: a LayerNorm that stays in fp32 under bf16 autocast,
// weight initialization, and the sequence-major batch layout with its padding masks.
//
// Layout: every encoder keeps activations sequence-major as 2-D (n*B, d) tensors, row i*B + b
// holding position i of sequence b. Then a mixing over the sequence axis (gMLP's spatial
// projection, the mixer's token MLP) is ONE GEMM on the (n, B*c) view, without transposes.
#ifndef GMLP_MODEL_LAYERS_H_
#define GMLP_MODEL_LAYERS_H_

#include <torch/torch.h>

#include <cstdint>
#include <utility>

#include "model/encoder.h"

namespace gmlp::model {

// The residual stream x + delta, in and between pre-LN blocks, with the add possibly not yet
// done: the LayerNorm that reads the sum next does it in its own pass (AddAndNormalize below),
// so the sum is not written by one kernel and read back by the next just to be normalized.
struct Residual {
  torch::Tensor x;      // (..., d)
  torch::Tensor delta;  // x's shape, or undefined when nothing is pending
  torch::Tensor Sum() const { return delta.defined() ? x + delta : x; }
};

// LayerNorm over the last dimension with parameters "weight" (ones) and "bias" (zeros), as
// kernels::LayerNorm (kernels/ops.h: reduced-precision inputs normalized in float; a norm that
// `feeds_matmuls`, a pre-LN block's, may write bf16 under CPU bf16 autocast).
class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(int64_t dim, double eps, bool feeds_matmuls = false);
  torch::Tensor forward(const torch::Tensor& x);
  // (r.Sum(), forward(r.Sum())), in one pass where kernels::AddLayerNorm can.
  std::pair<torch::Tensor, torch::Tensor> AddAndNormalize(const Residual& r);
  double eps() const { return eps_; }

  torch::Tensor weight, bias;

 private:
  double eps_;
  bool feeds_matmuls_;
};
TORCH_MODULE(LayerNorm);

// Dense layer d_in -> d_out, x W^T + b through kernels::Linear, with weight ~ N(0, std^2) and a
// zero bias (BERT's initialization). Its parameters are named as torch::nn::Linear's.
class DenseImpl : public torch::nn::Module {
 public:
  DenseImpl(int64_t d_in, int64_t d_out, double std);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight, bias;  // (d_out, d_in), (d_out)
};
TORCH_MODULE(Dense);

// GELU(linear(x)) [* gate] and norm(GELU(linear(x))), as kernels::LinearGelu and
// kernels::LinearGeluLayerNorm with the modules' parameters.
torch::Tensor LinearGelu(Dense& linear, const torch::Tensor& x, const torch::Tensor& gate = {});
torch::Tensor LinearGeluNorm(Dense& linear, const torch::Tensor& x, LayerNorm& norm);

// The padding of one batch in the sequence-major layout. Masks are undefined when the batch has
// no padding, so unpadded batches pay nothing for them.
struct SeqBatch {
  int64_t B = 0;
  int64_t n = 0;
  // (n*B, 1), 1 at real tokens and 0 at padding, in the activations' dtype; multiplying a
  // sequence-major activation by it zeroes padded rows before any mixing over positions.
  torch::Tensor keep_N1;
  // (B, 1, n): 0 at real keys, -1e9 at padded keys, added to attention scores (B, n, n) so
  // padded keys get zero probability (a large finite value, so an all-padding row stays finite).
  torch::Tensor key_bias_B1N;
};

// Checks the input's shapes (TORCH_CHECK) and builds the masks in `dtype`.
SeqBatch MakeSeqBatch(const EncoderInput& input, int64_t max_seq_len, torch::Dtype dtype);

// (n*B, d) sequence-major -> (B, n, d) view (non-contiguous).
torch::Tensor SeqMajorToBatchMajor(const torch::Tensor& x_ND, int64_t n, int64_t B);

// The rows [0, n) and columns [0, n) of a square (n_max, n_max) matrix, without a view when
// n == n_max (a narrow() view's backward would build a zero-filled n_max x n_max gradient).
torch::Tensor LeadingBlock(const torch::Tensor& w_MM, int64_t n);
// The first n entries of a vector, as an (n, 1) column for addmm's broadcast bias.
torch::Tensor LeadingColumn(const torch::Tensor& b_M, int64_t n);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_LAYERS_H_
