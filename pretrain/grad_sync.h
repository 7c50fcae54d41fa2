// Data-parallel gradient summation overlapped with backward, as PyTorch DDP does it: gradients
// are packed into flat buckets (parameters in reverse registration order, about the order
// backward produces them) and each bucket's allreduce starts as soon as its last gradient
// arrives, while backward keeps computing the earlier layers.
#ifndef GMLP_PRETRAIN_GRAD_SYNC_H_
#define GMLP_PRETRAIN_GRAD_SYNC_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "pretrain/dist.h"

namespace gmlp::pretrain {

// Unique parameters of `module` (a weight shared by two submodules, such as the MLM decoder tied
// to the token embedding, appears once), in registration order.
std::vector<torch::Tensor> UniqueParameters(torch::nn::Module& module);

class GradSync {
 public:
  // `params` must be unique leaves; `dist` must outlive this object. With world size 1 nothing
  // is hooked and every call is a no-op.
  GradSync(std::vector<torch::Tensor> params, Dist* dist, double bucket_mb);
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // Call before the backward of the last micro-batch of a step: its gradient hooks then add
  // what .grad() accumulated over earlier micro-batches and start the bucket allreduces. On
  // earlier micro-batches nothing is communicated.
  void PrepareFinalBackward();
  // Call after that backward: starts the buckets still open (parameters that got no gradient
  // contribute their .grad() or zeros), waits for all, and writes the SUM over ranks into every
  // parameter's .grad(). Throws c10::Error when a peer failed.
  void Finish();

  int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }
  // Buckets whose allreduce was started from inside backward at the last Finish().
  int64_t overlapped_buckets() const { return overlapped_; }

 private:
  struct Bucket {
    std::vector<int64_t> params;   // indices into params_
    std::vector<int64_t> offsets;  // element offsets into flat
    torch::Tensor flat;
    int64_t pending = 0;  // gradients still to arrive
    std::unique_ptr<PendingCollective> work;
  };

  void OnGrad(int64_t param, const torch::Tensor& grad);
  void LaunchReady();

  std::vector<torch::Tensor> params_;
  Dist* dist_;
  std::vector<Bucket> buckets_;
  std::vector<int64_t> bucket_of_;  // param -> bucket
  std::vector<int64_t> slot_of_;    // param -> position in its bucket
  std::vector<bool> arrived_;
  std::vector<unsigned> hook_ids_;
  bool armed_ = false;
  int64_t next_launch_ = 0;  // buckets launch strictly in index order, the same on every rank
  int64_t overlapped_ = 0;
};

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_GRAD_SYNC_H_
