#include "pretrain/optimizer.h"

#include <torch/version.h>

#include <cmath>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "kernels/ops.h"

// LibTorch 2.4 added a fused AdamW for CPU (CUDA had it before): one pass over each parameter's
// weight, gradient and moments instead of eight kernels, and an on-device `found_inf` skip.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define GMLP_HAVE_FUSED_ADAMW 1
#endif

namespace gmlp::pretrain {

bool DecaysWeight(const torch::Tensor& param) { return param.dim() >= 2; }

Optimizer::Optimizer(std::vector<torch::Tensor> params, OptimizerOptions options)
    : params_(std::move(params)), options_(std::move(options)) {
  TORCH_CHECK(options_.kind == "adamw" || options_.kind == "lamb", "unknown optimizer ",
              options_.kind);
  for (const torch::Tensor& p : params_) {
    exp_avg_.push_back(torch::zeros_like(p, torch::MemoryFormat::Contiguous));
    exp_avg_sq_.push_back(torch::zeros_like(p, torch::MemoryFormat::Contiguous));
  }
}

bool Optimizer::SkipsOnDevice() const {
#ifdef GMLP_HAVE_FUSED_ADAMW
  return options_.kind == "adamw";
#else
  return false;
#endif
}

void Optimizer::FusedAdamWStep(double lr, const torch::Tensor& skip) {
#ifdef GMLP_HAVE_FUSED_ADAMW
  // One fused call per (weight decay, device, dtype) group of the parameters that have a
  // gradient; their bias-correction step is the optimizer's, as in the loop below.
  struct Group {
    std::vector<torch::Tensor> p, g, m, v, t;
  };
  if (state_steps_.empty()) {
    for (const torch::Tensor& p : params_) {
      state_steps_.push_back(torch::zeros({}, p.options().dtype(torch::kFloat32)));
    }
  }
  std::map<std::tuple<bool, std::string, int>, Group> groups;
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& g = params_[i].grad();
    if (!g.defined()) continue;
    Group& grp = groups[{DecaysWeight(params_[i]), params_[i].device().str(),
                         static_cast<int>(params_[i].scalar_type())}];
    grp.p.push_back(params_[i]);
    grp.g.push_back(g);
    grp.m.push_back(exp_avg_[i]);
    grp.v.push_back(exp_avg_sq_[i]);
    grp.t.push_back(state_steps_[i]);
  }
  const c10::optional<torch::Tensor> found_inf =
      skip.defined() ? c10::optional<torch::Tensor>(skip.to(torch::kFloat32)) : c10::nullopt;
  for (auto& [key, grp] : groups) {
    at::_foreach_zero_(grp.t);
    at::_foreach_add_(grp.t, static_cast<double>(step_));
    at::_fused_adamw_(grp.p, grp.g, grp.m, grp.v, /*max_exp_avg_sqs=*/{}, grp.t, lr, options_.beta1,
                      options_.beta2, std::get<0>(key) ? options_.weight_decay : 0.0, options_.eps,
                      /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/c10::nullopt,
                      found_inf);
  }
#else
  TORCH_CHECK(false, "fused AdamW needs LibTorch >= 2.4");
#endif
}

void Optimizer::Step(double lr, const torch::Tensor& skip) {
  torch::NoGradGuard no_grad;
  ++step_;
  if (SkipsOnDevice()) {
    FusedAdamWStep(lr, skip);
    return;
  }
  const double b1 = options_.beta1, b2 = options_.beta2, eps = options_.eps;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(step_));
  if (options_.kind == "adamw") {
    std::vector<torch::Tensor> p, g, m, v;
    std::vector<double> wd;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!params_[i].grad().defined()) continue;
      p.push_back(params_[i]);
      g.push_back(params_[i].grad());
      m.push_back(exp_avg_[i]);
      v.push_back(exp_avg_sq_[i]);
      wd.push_back(DecaysWeight(params_[i]) ? options_.weight_decay : 0.0);
    }
    kernels::AdamW(p, g, m, v, wd, {lr, b1, b2, eps, bc1, bc2});
    return;
  }
  // LAMB.
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& p = params_[i];
    const torch::Tensor& g = p.grad();
    if (!g.defined()) continue;
    const double wd = DecaysWeight(p) ? options_.weight_decay : 0.0;
    torch::Tensor& m = exp_avg_[i];
    torch::Tensor& v = exp_avg_sq_[i];
    m.mul_(b1).add_(g, 1.0 - b1);
    v.mul_(b2).addcmul_(g, g, 1.0 - b2);
    torch::Tensor update = (m / bc1).div_((v / bc2).sqrt_().add_(eps));
    if (wd != 0.0) update.add_(p, wd);
    // The trust ratio stays on the device (no host sync per parameter).
    const torch::Tensor w_norm = p.norm(), u_norm = update.norm();
    const torch::Tensor trust = torch::where(w_norm.gt(0).logical_and(u_norm.gt(0)),
                                             w_norm / u_norm, torch::ones_like(w_norm));
    p.sub_(update.mul_(trust * lr));
  }
}

absl::Status Optimizer::Save(const std::string& path) const {
  try {
    torch::serialize::OutputArchive archive;
    archive.write("step", torch::tensor(step_, torch::kInt64));
    archive.write("num_params", torch::tensor(static_cast<int64_t>(params_.size())));
    for (size_t i = 0; i < params_.size(); ++i) {
      archive.write(absl::StrCat("exp_avg.", i), exp_avg_[i].cpu());
      archive.write(absl::StrCat("exp_avg_sq.", i), exp_avg_sq_[i].cpu());
    }
    archive.save_to(path);
  } catch (const c10::Error& e) {
    return absl::UnknownError(
        absl::StrCat(path, ": cannot write optimizer state: ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

absl::Status Optimizer::Load(const std::string& path) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path, torch::kCPU);
    // A fresh tensor for every read: reading into a defined one set_()s it in place, which
    // fails across dtypes.
    torch::Tensor t;
    archive.read("num_params", t);
    if (t.item<int64_t>() != static_cast<int64_t>(params_.size())) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": optimizer state holds ", t.item<int64_t>(), " tensors, the model has ",
          params_.size(), "; the checkpoint belongs to another architecture"));
    }
    t = torch::Tensor();
    archive.read("step", t);
    const int64_t step = t.item<int64_t>();
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      t = torch::Tensor();
      archive.read(absl::StrCat("exp_avg.", i), t);
      if (!t.sizes().equals(params_[i].sizes())) {
        return absl::FailedPreconditionError(
            absl::StrCat(path, ": optimizer tensor ", i, " has shape ", c10::str(t.sizes()),
                         ", the parameter ", c10::str(params_[i].sizes())));
      }
      exp_avg_[i].copy_(t);
      t = torch::Tensor();
      archive.read(absl::StrCat("exp_avg_sq.", i), t);
      exp_avg_sq_[i].copy_(t);
    }
    step_ = step;
  } catch (const c10::Error& e) {
    return absl::DataLossError(absl::StrCat(path, ": cannot read optimizer state (",
                                            e.what_without_backtrace(),
                                            "); resume from an older checkpoint"));
  }
  return absl::OkStatus();
}

torch::Tensor ClipGradNormAsync(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) {
    return torch::zeros({}, torch::TensorOptions(torch::kFloat64)
                                .device(params.empty() ? torch::kCPU : params[0].device()));
  }
  return kernels::ClipByGlobalNorm(grads, max_norm);
}

double ClipGradNorm(const std::vector<torch::Tensor>& params, double max_norm) {
  return ClipGradNormAsync(params, max_norm).item<double>();
}

}  // namespace gmlp::pretrain
