// SplitMix64 (Steele, Lea and Flood, 2014), the one hash behind every seeded stream of the
// project: the data pipeline's generators and keys, the trainer's per-step seeds and the dropout
// masks. Header-only, so the dropout kernel's inner loop inlines it.
#ifndef GMLP_COMMON_MIX64_H_
#define GMLP_COMMON_MIX64_H_

#include <cstdint>

namespace gmlp {

// SplitMix64's state increment (2^64 / golden ratio, odd).
inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// SplitMix64's output function: a bijective 64-bit mixer with good avalanche.
inline constexpr uint64_t Mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The output of one SplitMix64 step from state x; as a function, a well-mixed hash of x.
inline constexpr uint64_t SplitMix64(uint64_t x) { return Mix64(x + kGoldenGamma); }

// The generator's state before its i-th output (from 0): SplitMix64At(seed, i) is
// Mix64(SplitMix64State(seed, i)), and the states of consecutive outputs differ by kGoldenGamma.
inline constexpr uint64_t SplitMix64State(uint64_t seed, uint64_t i) {
  return seed + (i + 1) * kGoldenGamma;
}

// The i-th output (from 0) of the SplitMix64 generator seeded with `seed`. Random access: threads
// can each draw their own index range of one stream.
inline constexpr uint64_t SplitMix64At(uint64_t seed, uint64_t i) {
  return Mix64(SplitMix64State(seed, i));
}

}  // namespace gmlp

#endif  // GMLP_COMMON_MIX64_H_
