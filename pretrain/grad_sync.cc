#include "pretrain/grad_sync.h"

#include <unordered_set>

namespace gmlp::pretrain {

std::vector<torch::Tensor> UniqueParameters(torch::nn::Module& module) {
  std::vector<torch::Tensor> out;
  std::unordered_set<const void*> seen;
  for (const torch::Tensor& p : module.parameters(/*recurse=*/true)) {
    if (seen.insert(p.unsafeGetTensorImpl()).second) out.push_back(p);
  }
  return out;
}

GradSync::GradSync(std::vector<torch::Tensor> params, Dist* dist, double bucket_mb)
    : params_(std::move(params)), dist_(dist) {
  if (dist_ == nullptr || dist_->world_size() == 1) return;
  const int64_t n = static_cast<int64_t>(params_.size());
  bucket_of_.assign(n, -1);
  slot_of_.assign(n, -1);
  arrived_.assign(n, false);
  const int64_t cap_bytes = static_cast<int64_t>(bucket_mb * 1024 * 1024);
  int64_t bytes = 0;
  for (int64_t i = n - 1; i >= 0; --i) {
    const torch::Tensor& p = params_[i];
    if (!p.requires_grad()) continue;
    TORCH_CHECK(p.is_contiguous(), "GradSync: parameter ", i, " is not contiguous");
    const int64_t b = p.numel() * static_cast<int64_t>(p.element_size());
    if (buckets_.empty() || (bytes > 0 && bytes + b > cap_bytes)) {
      buckets_.emplace_back();
      bytes = 0;
    }
    Bucket& bucket = buckets_.back();
    bucket_of_[i] = static_cast<int64_t>(buckets_.size()) - 1;
    slot_of_[i] = static_cast<int64_t>(bucket.params.size());
    bucket.offsets.push_back(
        bucket.params.empty() ? 0 : bucket.offsets.back() + params_[bucket.params.back()].numel());
    bucket.params.push_back(i);
    bytes += b;
  }
  for (Bucket& bucket : buckets_) {
    const int64_t last = bucket.params.back();
    const int64_t numel = bucket.offsets.back() + params_[last].numel();
    bucket.flat = torch::zeros({numel}, params_[last].options().requires_grad(false));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (bucket_of_[i] < 0) continue;
    // In LibTorch 1.13 a leaf's hook sees the whole gradient this backward produced for it
    // (every use, e.g. both ends of a tied weight, already summed), before it is accumulated.
    hook_ids_.push_back(params_[i].register_hook([this, i](torch::Tensor grad) {
      if (armed_) OnGrad(i, grad);
    }));
  }
}

GradSync::~GradSync() {
  for (size_t k = 0, h = 0; k < params_.size() && h < hook_ids_.size(); ++k) {
    if (bucket_of_.empty() || bucket_of_[k] < 0) continue;
    params_[k].remove_hook(hook_ids_[h++]);
  }
}

void GradSync::PrepareFinalBackward() {
  if (buckets_.empty()) return;
  armed_ = true;
  next_launch_ = 0;
  overlapped_ = 0;
  std::fill(arrived_.begin(), arrived_.end(), false);
  for (Bucket& bucket : buckets_) {
    bucket.pending = static_cast<int64_t>(bucket.params.size());
    bucket.work.reset();
  }
}

void GradSync::OnGrad(int64_t param, const torch::Tensor& grad) {
  torch::NoGradGuard no_grad;
  Bucket& bucket = buckets_[bucket_of_[param]];
  const torch::Tensor& p = params_[param];
  torch::Tensor slice = bucket.flat.narrow(0, bucket.offsets[slot_of_[param]], p.numel());
  const torch::Tensor& previous = p.grad();
  if (previous.defined()) {
    torch::add_out(slice, previous.reshape({-1}), grad.reshape({-1}));
  } else {
    slice.copy_(grad.reshape({-1}));
  }
  if (!arrived_[param]) {
    arrived_[param] = true;
    --bucket.pending;
  }
  if (bucket.pending == 0) LaunchReady();
}

void GradSync::LaunchReady() {
  while (next_launch_ < static_cast<int64_t>(buckets_.size()) &&
         buckets_[next_launch_].pending == 0) {
    Bucket& bucket = buckets_[next_launch_++];
    bucket.work = dist_->AllreduceSumAsync(bucket.flat);
    if (armed_) ++overlapped_;
  }
}

void GradSync::Finish() {
  if (buckets_.empty()) return;
  torch::NoGradGuard no_grad;
  // Parameters that took no part in this backward still join the sum (every rank must send
  // every bucket): their accumulated .grad() if any, else zeros.
  for (Bucket& bucket : buckets_) {
    if (bucket.pending == 0) continue;
    for (size_t s = 0; s < bucket.params.size(); ++s) {
      const int64_t i = bucket.params[s];
      if (arrived_[i]) continue;
      torch::Tensor slice = bucket.flat.narrow(0, bucket.offsets[s], params_[i].numel());
      if (params_[i].grad().defined()) {
        slice.copy_(params_[i].grad().reshape({-1}));
      } else {
        slice.zero_();
      }
      arrived_[i] = true;
    }
    bucket.pending = 0;
  }
  const int64_t launched_in_backward = overlapped_;
  armed_ = false;
  LaunchReady();
  overlapped_ = launched_in_backward;
  for (Bucket& bucket : buckets_) {
    bucket.work->Wait();
    bucket.work.reset();
    for (size_t s = 0; s < bucket.params.size(); ++s) {
      torch::Tensor& p = params_[bucket.params[s]];
      torch::Tensor summed = bucket.flat.narrow(0, bucket.offsets[s], p.numel()).view_as(p);
      if (p.grad().defined()) {
        p.mutable_grad().copy_(summed);
      } else {
        p.mutable_grad() = summed.clone();
      }
    }
  }
}

}  // namespace gmlp::pretrain
