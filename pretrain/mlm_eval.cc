#include "pretrain/mlm_eval.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"
#include "kernels/autocast.h"
#include "kernels/ops.h"

namespace gmlp::pretrain {

absl::StatusOr<torch::Tensor> MlmEvalSums(const MlmForwardFn& forward, data::MlmLoader& loader,
                                          int64_t batches, torch::Device device, bool bf16) {
  torch::NoGradGuard no_grad;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  torch::Tensor loss_sum = torch::zeros({}, f64);
  torch::Tensor correct = torch::zeros({}, f64);
  torch::Tensor count = torch::zeros({}, f64);
  for (int64_t k = 0; k < batches; ++k) {
    GMLP_ASSIGN_OR_RETURN(data::MlmBatch batch, loader.Next());
    MlmTensors t = ToTensors(batch, device);
    if (t.masked_index.numel() == 0) continue;
    torch::Tensor logits_MV;
    {
      kernels::AutocastScope autocast(bf16);
      logits_MV = forward(t.input, t.masked_index);
    }
    const kernels::CrossEntropySum loss = kernels::SumCrossEntropy(logits_MV, t.labels);
    // Each batch's float32 sum is added in float64, as a host-side double sum would be.
    loss_sum += loss.loss.to(torch::kFloat64);
    correct += loss.argmax.eq(t.labels).sum().to(torch::kFloat64);
    count += static_cast<double>(t.labels.size(0));
  }
  return torch::stack({loss_sum, correct, count});
}

MlmEval MlmEvalFromSums(const torch::Tensor& sums) {
  const torch::Tensor host = sums.to(torch::kCPU, torch::kFloat64).contiguous();
  const double* s = host.data_ptr<double>();
  MlmEval e;
  const double n = std::max(s[2], 1.0);
  e.loss = s[0] / n;
  e.accuracy = s[1] / n;
  e.perplexity = std::exp(e.loss);
  e.masked_tokens = static_cast<int64_t>(s[2]);
  return e;
}

absl::StatusOr<MlmEval> EvaluateMlm(const MlmForwardFn& forward, data::MlmLoader& loader,
                                    int64_t batches, torch::Device device, bool bf16) {
  GMLP_ASSIGN_OR_RETURN(torch::Tensor sums, MlmEvalSums(forward, loader, batches, device, bf16));
  return MlmEvalFromSums(sums);
}

}  // namespace gmlp::pretrain
