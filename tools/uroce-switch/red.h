/**
 * @file red.h
 * @brief RED/ECN marking probability of a congestion point (docs/dcqcn-pfc.md §1.2): on the
 * instantaneous egress queue q (bytes) P(mark) = 0 for q <= kmin, pmax * (q - kmin) /
 * (kmax - kmin) for kmin < q < kmax, 1 for q >= kmax. Only ECT(0)/ECT(1) packets are marked
 * (set to CE, RFC 3168). Units: bytes; probability in [0, 1].
 */
#pragma once

#include <cstdint>

namespace uroce::uswitch {

struct RedParams {
  bool enabled = true;  ///< --ecn on|off
  uint64_t kmin_bytes = 20 * 1024;
  uint64_t kmax_bytes = 200 * 1024;
  double pmax = 0.2;
  bool at_dequeue = false;  ///< mark on dequeue (queue left behind) instead of on enqueue
};

/// P(mark) for a queue of `q` bytes.
inline double mark_probability(const RedParams& p, uint64_t q) {
  if (!p.enabled || q <= p.kmin_bytes) return 0.0;
  if (q >= p.kmax_bytes) return 1.0;
  return p.pmax * static_cast<double>(q - p.kmin_bytes) /
         static_cast<double>(p.kmax_bytes - p.kmin_bytes);
}

/// Deterministic xorshift64* draw in [0, 1): the marker's random source (seeded, no clock).
class MarkRng {
 public:
  explicit MarkRng(uint64_t seed) : s_(seed ? seed : 0x9E3779B97F4A7C15ull) {}
  double next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return static_cast<double>((s_ * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
  }
  /// True with probability mark_probability(p, q).
  bool should_mark(const RedParams& p, uint64_t q) {
    double pr = mark_probability(p, q);
    return pr >= 1.0 || (pr > 0.0 && next() < pr);
  }

 private:
  uint64_t s_;
};

}  // namespace uroce::uswitch
