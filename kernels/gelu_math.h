// GELU and its derivative in plain float arithmetic, shared by the kernels that apply GELU
// (gelu_cpu.cc) and that normalize its output (layer_norm_cpu.cc).
#ifndef GMLP_KERNELS_GELU_MATH_H_
#define GMLP_KERNELS_GELU_MATH_H_

#include "kernels/cpu_kernel_util.h"

namespace gmlp::kernels::cpu {

// GELU(a) = a Phi(a) and GELU'(a) = Phi(a) + a phi(a). erf from Abramowitz & Stegun 7.1.26
// (absolute error <= 1.5e-7), computed as erfc for negative inputs so that small Phi(a) keep
// their relative accuracy. GCC vectorizes it (no libm calls).
inline void GeluAndSlope(float a, float* gelu, float* slope) {
  const float u = a * 0.707106781186547524f;  // a / sqrt(2)
  const float abs_u = u < 0.0f ? -u : u;
  const float t = 1.0f / (1.0f + 0.3275911f * abs_u);
  float r = 1.061405429f;
  r = r * t + -1.453152027f;
  r = r * t + 1.421413741f;
  r = r * t + -0.284496736f;
  r = r * t + 0.254829592f;
  const float e = ExpNonPositive(-(u * u));    // exp(-a^2 / 2)
  const float half_erfc = 0.5f * (r * t * e);  // Phi(-|a|) = erfc(|u|) / 2
  const float cdf = u < 0.0f ? half_erfc : 1.0f - half_erfc;
  *gelu = a * cdf;
  *slope = cdf + a * (e * 0.398942280401432678f);  // phi(a) = exp(-a^2 / 2) / sqrt(2 pi)
}

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_GELU_MATH_H_
