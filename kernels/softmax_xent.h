// Softmax cross-entropy over a vocabulary, fused for the CPU training step (bf16 or fp32 logits).
//
// The MLM loss of a bf16 step used to cast the (M, V) logits to fp32, run ATen's log_softmax
// (materialising (M, V) log-probabilities), nll_loss, a separate argmax for the accuracy, and in
// backward a (M, V) fp32 gradient cast back to bf16: 10-15 ms of a ~115 ms gmlp-tiny bf16 step
// (bench/RESULTS.md). An fp32 step ran the same ATen ops without the casts (~10 ms of ~280). Here
// each row is read in its own dtype, in float: one pass for the maximum (and so the argmax), one
// for the sum of exponentials; only the log-sum-exp (M floats) is kept for backward, which writes d
// logits = (softmax - onehot) * g in the logits' dtype in one pass.
#ifndef GMLP_KERNELS_SOFTMAX_XENT_H_
#define GMLP_KERNELS_SOFTMAX_XENT_H_

#include <torch/torch.h>

namespace gmlp::kernels::cpu {

struct SoftmaxXent {
  torch::Tensor loss_M;    // float32 (M): -log softmax(logits)[label], differentiable
  torch::Tensor argmax_M;  // int64 (M): the first index of each row's maximum
};

// logits (M, V) float32 or bfloat16 on the CPU; labels (M) int64 in [0, V). A row with a NaN or
// infinite logit gets a NaN loss (and NaN gradients), as the trainer's finiteness check expects.
SoftmaxXent SoftmaxCrossEntropy(const torch::Tensor& logits_MV, const torch::Tensor& labels_M);

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_SOFTMAX_XENT_H_
