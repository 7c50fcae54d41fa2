// Helpers for gmlp's own CPU kernels (attention_bf16.cc, dropout.cc, softmax_xent.cc,
// layer_norm_cpu.cc, gelu_cpu.cc, multi_tensor_cpu.cc): plain loops that GCC vectorizes, compiled
// for several instruction sets, with bf16 handled as its 16 bits.
#ifndef GMLP_KERNELS_CPU_KERNEL_UTIL_H_
#define GMLP_KERNELS_CPU_KERNEL_UTIL_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

// On a function: compiled for x86-64-v4 (AVX-512, with 64-bit vector multiplies), x86-64-v3
// (AVX2, FMA) and the baseline; the loader picks one for the CPU at start-up. Whether the clones
// compute the same bits depends on the file's FMA contraction, which kernels/CMakeLists.txt sets:
// off (the same bits) everywhere but gelu_cpu.cc and layer_norm_cpu.cc.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GMLP_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GMLP_VECTOR_CLONES
#endif

namespace gmlp::kernels::cpu {

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

// A kernel templated on its element type (float, or bf16 as uint16_t bits) reads and writes
// through these: widened to float, and stored with one rounding.
inline float Widen(float x) { return x; }
inline float Widen(uint16_t bf16) { return Bf16BitsToFloat(bf16); }
inline void Store(float v, float* out) { *out = v; }
inline void Store(float v, uint16_t* out) { *out = FloatToBf16Bits(v); }

// exp(x) for x <= 0 (NaN stays NaN), within about 1 ulp: Cephes' expf. x is clamped at -87
// (exp(-87) = 1.6e-38, the smallest power of two reached is 2^-126, a normal float), where a
// softmax probability or a Gaussian density is zero for every purpose here. Plain float arithmetic
// (no libm), so GCC vectorizes it; the rounding to the nearest integer is the 1.5 * 2^23 trick,
// exact for |x log2 e| < 2^22.
inline float ExpNonPositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  const float shifted = x * 1.44269504088896341f + kMagic;
  const float k = shifted - kMagic;
  int32_t k_bits;
  std::memcpy(&k_bits, &shifted, sizeof(k_bits));
  const int32_t ki = k_bits - 0x4B400000;  // the integer k from shifted's low mantissa bits
  const float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  const uint32_t scale_bits = static_cast<uint32_t>(ki + 127) << 23;
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof(scale));
  return y * scale;
}

// out[j] = the sum over blocks of parts[blk * d + j], added in block order: kernels that sum a
// gradient over rows write one partial sum per fixed block of rows, so the total has the same
// bits at any thread count.
inline void SumBlocksInOrder(const float* parts, int64_t blocks, int64_t d, float* out) {
  for (int64_t j = 0; j < d; ++j) out[j] = 0.0f;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    for (int64_t j = 0; j < d; ++j) out[j] += parts[blk * d + j];
  }
}

// A contiguous bf16 tensor's elements as their bits, for the kernels' uint16_t loops.
inline uint16_t* Bf16Bits(const at::Tensor& t) {
  return reinterpret_cast<uint16_t*>(t.data_ptr<at::BFloat16>());
}

// A contiguous bf16 or float32 tensor's elements as a kernel templated on T reads them (bf16 as
// its bits: T = uint16_t), or null when the tensor is undefined.
template <typename T>
T* KernelData(const at::Tensor& t) {
  if (!t.defined()) return nullptr;
  if constexpr (std::is_same_v<T, uint16_t>) {
    return Bf16Bits(t);
  } else {
    return t.data_ptr<float>();
  }
}

// f(T{}) with T the kernels' element type for t's dtype: uint16_t for bf16, float for float32.
template <typename F>
void WithKernelType(const at::Tensor& t, F&& f) {
  if (t.scalar_type() == at::kBFloat16) {
    f(uint16_t{});
  } else {
    f(float{});
  }
}

}  // namespace gmlp::kernels::cpu

#endif  // GMLP_KERNELS_CPU_KERNEL_UTIL_H_
