// Helpers for gmlp's own CPU kernels (dropout.cc, softmax_xent.cc, layer_norm_bf16.cc,
// pretrain/multi_tensor_cpu.cc): plain loops that GCC vectorizes, compiled for several
// instruction sets, with bf16 handled as its 16 bits.
#ifndef GMLP_MODEL_CPU_KERNEL_UTIL_H_
#define GMLP_MODEL_CPU_KERNEL_UTIL_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <cstring>

// On a function: compiled for x86-64-v4 (AVX-512, with 64-bit vector multiplies), x86-64-v3
// (AVX2, FMA) and the baseline; the loader picks one for the CPU at start-up. Files that use it
// compile with -ffp-contract=off, so that every clone computes the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GMLP_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GMLP_VECTOR_CLONES
#endif

namespace gmlp::model {

// bfloat16 as its bits (c10::BFloat16's operators convert one element at a time): widened to
// float exactly, and rounded back to nearest even as c10::BFloat16 rounds (NaN to 0x7FC0).
inline float Bf16BitsToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline uint16_t FloatToBf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  const auto rounded = static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  return f != f ? static_cast<uint16_t>(0x7FC0) : rounded;
}

// A contiguous bf16 tensor's elements as their bits, for the kernels' uint16_t loops.
inline uint16_t* Bf16Bits(const at::Tensor& t) {
  return reinterpret_cast<uint16_t*>(t.data_ptr<at::BFloat16>());
}

}  // namespace gmlp::model

#endif  // GMLP_MODEL_CPU_KERNEL_UTIL_H_
