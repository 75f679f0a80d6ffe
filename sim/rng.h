/**
 * @file rng.h
 * @brief A small seeded PRNG (SplitMix64) whose output is identical on every platform and
 * standard library, unlike std::uniform_*_distribution. Units: none.
 *
 * Every impairment of every link owns one Rng, seeded from the link seed and the impairment's
 * index, and draws exactly once per frame, so changing one impairment's rate never changes the
 * pattern of another.
 */
#pragma once

#include <cstdint>

namespace uroce::sim {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : s_(seed) {}
  void reseed(uint64_t seed) { s_ = seed; }

  /// Next 64 random bits (SplitMix64, Steele/Lea/Flood 2014).
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 bits of precision.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// True with probability p (p <= 0: never, p >= 1: always). Always draws one number.
  bool bernoulli(double p) { return uniform() < p; }
  /// Uniform integer in [0, n); n > 0.
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t s_;
};

/// Derives an independent seed for stream `index` of a generator seeded with `seed`.
inline uint64_t derive_seed(uint64_t seed, uint64_t index) {
  Rng r(seed ^ (0xd1b54a32d192ed03ull * (index + 1)));
  return r.next();
}

}  // namespace uroce::sim
