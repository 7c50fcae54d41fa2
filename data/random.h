// Portable, seedable randomness for the data pipeline: a SplitMix64 generator, key mixing, and a
// constant-memory pseudo-random permutation of [0, n). The standard library's distributions differ
// between implementations, so anything that must reproduce bit for bit on another machine (the
// validation split, the epoch order, the masks) uses these instead.
#ifndef GMLP_DATA_RANDOM_H_
#define GMLP_DATA_RANDOM_H_

#include <cstdint>

#include "common/mix64.h"

namespace gmlp::data {

// Mixes several integers into one 64-bit key; order matters. Used to derive independent streams
// from (seed, epoch, batch, rank) and to hash (seed, file, document) for the validation split.
uint64_t HashKey(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0);

// SplitMix64 (Steele et al. 2014): tiny state, so a fresh generator per batch costs nothing.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift with rejection: no modulo bias).
  uint64_t Uniform(uint64_t n);
  // Uniform double in [0, 1) with 53 random bits.
  double UniformDouble();

 private:
  uint64_t state_;
};

// A bijection of [0, n) chosen by `key`: a balanced Feistel network on the smallest even-width
// power-of-two domain covering n, with cycle walking back into range. perm(i) costs O(1) time and
// memory, so an epoch over 10^9 sequences needs no permutation array and resuming at any position
// needs no replay.
class Permutation {
 public:
  Permutation(uint64_t n, uint64_t key);
  uint64_t operator()(uint64_t i) const;
  uint64_t size() const { return n_; }

 private:
  uint64_t Encrypt(uint64_t x) const;

  uint64_t n_;
  uint64_t keys_[4];
  int half_bits_;
  uint64_t half_mask_;
};

}  // namespace gmlp::data

#endif  // GMLP_DATA_RANDOM_H_
