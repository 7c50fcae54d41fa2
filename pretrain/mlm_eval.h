// EvaluateMlm: the one implementation of the held-out masked-token loss, used by the trainer's
// periodic evaluation and the study's perplexity table.
#ifndef GMLP_PRETRAIN_MLM_EVAL_H_
#define GMLP_PRETRAIN_MLM_EVAL_H_

#include <torch/torch.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "data/loader.h"
#include "pretrain/trainer.h"

namespace gmlp::pretrain {

struct MlmEval {
  double loss = 0;  // masked-token cross-entropy, nats per masked token
  double accuracy = 0;
  double perplexity = 0;  // exp(loss)
  int64_t masked_tokens = 0;
};

// Runs `forward` (no gradients; bf16 autocast when `bf16`) on the next `batches` batches of
// `loader` and returns their sums as a (3,) float64 tensor on `device`: cross-entropy of the
// masked tokens, correct argmax predictions, masked tokens. Nothing is copied to the host, so
// ranks can allreduce the sums before MlmEvalFromSums. Batches without masked tokens add 0.
absl::StatusOr<torch::Tensor> MlmEvalSums(const MlmForwardFn& forward, data::MlmLoader& loader,
                                          int64_t batches, torch::Device device, bool bf16);

// Loss, accuracy and perplexity from MlmEvalSums (one host sync); zeros when nothing was masked.
MlmEval MlmEvalFromSums(const torch::Tensor& sums);

// MlmEvalFromSums(MlmEvalSums(...)) on one process.
absl::StatusOr<MlmEval> EvaluateMlm(const MlmForwardFn& forward, data::MlmLoader& loader,
                                    int64_t batches, torch::Device device, bool bf16);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_MLM_EVAL_H_
