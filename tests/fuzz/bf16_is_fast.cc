// kernels::Bf16IsFast for the torch-free fuzz build: the CPU's answer alone (the real one,
// kernels/ops.cc, also asks LibTorch for a CUDA device). Only the study config's bf16 defaults
// read it here.
#include "kernels/policy.h"

namespace gmlp::kernels {

bool Bf16IsFast() { return CpuHasNativeBf16(); }

}  // namespace gmlp::kernels
