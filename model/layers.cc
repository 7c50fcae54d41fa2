// LayerNorm, initialization and sequence-major batch helpers (see layers.h).
#include "model/layers.h"

#include "kernels/ops.h"

namespace gmlp::model {

LayerNormImpl::LayerNormImpl(int64_t dim, double eps, bool feeds_matmuls)
    : eps_(eps), feeds_matmuls_(feeds_matmuls) {
  weight = register_parameter("weight", torch::ones({dim}));
  bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  return kernels::LayerNorm(x, weight, bias, eps_, feeds_matmuls_);
}

std::pair<torch::Tensor, torch::Tensor> LayerNormImpl::AddAndNormalize(const Residual& r) {
  return kernels::AddLayerNorm(r.x, r.delta, weight, bias, eps_, feeds_matmuls_);
}

DenseImpl::DenseImpl(int64_t d_in, int64_t d_out, double std) {
  weight = register_parameter("weight", torch::empty({d_out, d_in}).normal_(0.0, std));
  bias = register_parameter("bias", torch::zeros({d_out}));
}

torch::Tensor DenseImpl::forward(const torch::Tensor& x) {
  return kernels::Linear(x, weight, bias);
}

torch::Tensor LinearGelu(Dense& linear, const torch::Tensor& x, const torch::Tensor& gate) {
  return kernels::LinearGelu(x, linear->weight, linear->bias, gate);
}

torch::Tensor LinearGeluNorm(Dense& linear, const torch::Tensor& x, LayerNorm& norm) {
  return kernels::LinearGeluLayerNorm(x, linear->weight, linear->bias, norm->weight, norm->bias,
                                      norm->eps());
}

SeqBatch MakeSeqBatch(const EncoderInput& input, int64_t max_seq_len, torch::Dtype dtype) {
  const torch::Tensor& ids = input.input_ids;
  TORCH_CHECK(ids.defined() && ids.dim() == 2, "input_ids must be (B, n), got ",
              ids.defined() ? ids.sizes() : torch::IntArrayRef{});
  TORCH_CHECK(ids.scalar_type() == torch::kLong, "input_ids must be int64");
  SeqBatch batch;
  batch.B = ids.size(0);
  batch.n = ids.size(1);
  TORCH_CHECK(batch.n >= 1 && batch.n <= max_seq_len, "sequence length ", batch.n,
              " is outside [1, max_seq_len = ", max_seq_len, "]");
  if (input.segment_ids.defined()) {
    TORCH_CHECK(input.segment_ids.sizes() == ids.sizes(), "segment_ids ", input.segment_ids.sizes(),
                " must match input_ids ", ids.sizes());
  }
  const torch::Tensor& pad = input.pad_mask;
  if (pad.defined()) {
    TORCH_CHECK(pad.sizes() == ids.sizes(), "pad_mask ", pad.sizes(), " must match input_ids ",
                ids.sizes());
    const torch::Tensor keep_BN = pad.to(torch::kBool);
    // On a GPU, asking whether anything is padded would stall the stream (a host sync every
    // forward); building masks that change nothing costs less there.
    if (keep_BN.is_cuda() || !keep_BN.all().item<bool>()) {
      const torch::Tensor keep = keep_BN.to(dtype);
      batch.keep_N1 = keep.t().reshape({batch.n * batch.B, 1});
      batch.key_bias_B1N = ((1.0 - keep) * -1e9).unsqueeze(1);
    }
  }
  return batch;
}

torch::Tensor SeqMajorToBatchMajor(const torch::Tensor& x_ND, int64_t n, int64_t B) {
  return x_ND.view({n, B, x_ND.size(-1)}).transpose(0, 1);
}

torch::Tensor LeadingBlock(const torch::Tensor& w_MM, int64_t n) {
  if (n == w_MM.size(0) && n == w_MM.size(1)) return w_MM;
  return w_MM.narrow(0, 0, n).narrow(1, 0, n);
}

torch::Tensor LeadingColumn(const torch::Tensor& b_M, int64_t n) {
  return (n == b_M.size(0) ? b_M : b_M.narrow(0, 0, n)).unsqueeze(1);
}

}  // namespace gmlp::model
