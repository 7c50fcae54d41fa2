#include "data/random.h"

namespace gmlp::data {

uint64_t HashKey(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  // Distinct odd constants per slot so that (a, b) and (b, a) give different keys.
  uint64_t h = Mix64(a + 0x9e3779b97f4a7c15ULL);
  h = Mix64(h ^ (b + 0xc2b2ae3d27d4eb4fULL));
  h = Mix64(h ^ (c + 0x165667b19e3779f9ULL));
  h = Mix64(h ^ (d + 0x27d4eb2f165667c5ULL));
  return h;
}

uint64_t Rng::Next() {
  state_ += kGoldenGamma;
  return Mix64(state_);
}

uint64_t Rng::Uniform(uint64_t n) {
  // Lemire, "Fast random integer generation in an interval" (2019).
  uint64_t x = Next();
  unsigned __int128 m = static_cast<unsigned __int128>(x) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      x = Next();
      m = static_cast<unsigned __int128>(x) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::UniformDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

Permutation::Permutation(uint64_t n, uint64_t key) : n_(n) {
  int bits = 2;
  while (bits < 64 && (uint64_t{1} << bits) < n) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < 4; ++r) keys_[r] = HashKey(key, static_cast<uint64_t>(r), 0x5045524dULL);
}

uint64_t Permutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t k : keys_) {
    const uint64_t f = Mix64(right ^ k) & half_mask_;
    const uint64_t next_right = left ^ f;
    left = right;
    right = next_right;
  }
  return (left << half_bits_) | right;
}

uint64_t Permutation::operator()(uint64_t i) const {
  // The domain is at most 4n, so cycle walking takes fewer than 4 steps on average; it stays a
  // bijection on [0, n) because Encrypt is one on the whole domain.
  uint64_t x = Encrypt(i);
  while (x >= n_) x = Encrypt(x);
  return x;
}

}  // namespace gmlp::data
