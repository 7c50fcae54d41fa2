// bf16 autocast for a forward pass: RAII scope used by the pretrainer and the finetuner.
// On CPU (LibTorch 1.13 and 2.x) matmuls and linears run in bf16 through oneDNN (about 2x fp32
// on an AVX-512-bf16 CPU); the encoders keep LayerNorm and the losses in fp32 (model/layers.h).
// With a CUDA LibTorch (GMLP_WITH_CUDA) the GPU autocast is enabled as well.
#ifndef GMLP_MODEL_AUTOCAST_H_
#define GMLP_MODEL_AUTOCAST_H_

#include <ATen/autocast_mode.h>

namespace gmlp::model {

class AutocastScope {
 public:
  explicit AutocastScope(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
#ifdef GMLP_WITH_CUDA
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~AutocastScope() {
    if (!enabled_) return;
    at::autocast::set_cpu_enabled(false);
#ifdef GMLP_WITH_CUDA
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
};

}  // namespace gmlp::model

#endif  // GMLP_MODEL_AUTOCAST_H_
