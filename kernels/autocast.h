// bf16 autocast for a forward pass: RAII scope used by the pretrainer and the finetuner.
// On CPU (LibTorch 1.13 and 2.x) matmuls and linears run in bf16 through oneDNN (about 2x fp32
// on an AVX-512-bf16 CPU); the encoders keep LayerNorm and the losses in fp32 (model/layers.h).
// With a CUDA LibTorch (GMLP_WITH_CUDA) the GPU autocast is enabled as well.
#ifndef GMLP_KERNELS_AUTOCAST_H_
#define GMLP_KERNELS_AUTOCAST_H_

#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "kernels/policy.h"  // Bf16IsFast

namespace gmlp::kernels {

// Whether CPU autocast is on (in any dtype).
inline bool CpuAutocastEnabled() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(at::kCPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}

// Whether CPU autocast is on and casts to bf16 (the kernels of gelu_cpu.h are then used).
inline bool CpuAutocastsToBf16() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return CpuAutocastEnabled() && at::autocast::get_autocast_dtype(at::kCPU) == at::kBFloat16;
#else
  return CpuAutocastEnabled() && at::autocast::get_autocast_cpu_dtype() == at::kBFloat16;
#endif
}

class AutocastScope {
 public:
  explicit AutocastScope(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
    Set(at::kCPU, true);
#ifdef GMLP_WITH_CUDA
    Set(at::kCUDA, true);
#endif
  }
  ~AutocastScope() {
    if (!enabled_) return;
    Set(at::kCPU, false);
#ifdef GMLP_WITH_CUDA
    Set(at::kCUDA, false);
#endif
    at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  // LibTorch 2.4 replaced the per-device setters with device-type arguments; the old ones remain
  // there as wrappers that print a deprecation warning on every call.
  static void Set(at::DeviceType device, bool on) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    if (on) at::autocast::set_autocast_dtype(device, at::kBFloat16);
    at::autocast::set_autocast_enabled(device, on);
#else
    if (device == at::kCPU) {
      if (on) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::set_cpu_enabled(on);
    } else {
      if (on) at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
      at::autocast::set_enabled(on);
    }
#endif
  }

  bool enabled_;
};

}  // namespace gmlp::kernels

#endif  // GMLP_KERNELS_AUTOCAST_H_
