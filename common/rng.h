// SplitMix64Rng: a small seeded generator for draws that must be the same on every platform and
// standard library (std:: distributions are not): unbiased bounded integers, unit doubles and a
// Fisher-Yates shuffle over the SplitMix64 stream of common/mix64.h.
#ifndef GMLP_COMMON_RNG_H_
#define GMLP_COMMON_RNG_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "common/mix64.h"

namespace gmlp {

class SplitMix64Rng {
 public:
  explicit SplitMix64Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    state_ += kGoldenGamma;
    return Mix64(state_);
  }
  // Uniform in [0, n), n > 0, unbiased (rejection).
  uint64_t Uniform(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = Next();
    while (x >= limit);
    return x % n;
  }
  // Uniform in [0, 1), 53 random bits.
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  template <typename T>
  void Shuffle(std::vector<T>* v) {  // Fisher-Yates
    for (size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[Uniform(i)]);
  }

 private:
  uint64_t state_;
};

}  // namespace gmlp

#endif  // GMLP_COMMON_RNG_H_
