/**
 * @file red.h
 * @brief uroce-switch's RED/ECN marker: its options (--ecn, --kmin/--kmax/--pmax, --mark) and
 * its seeded random draw, on lib/dcqcn's marking curve (dcqcn/red.h). Only ECT(0)/ECT(1)
 * packets are marked (set to CE, RFC 3168). Units: bytes; probability in [0, 1].
 */
#pragma once

#include <cstdint>

#include "dcqcn/red.h"

namespace uroce::uswitch {

struct RedParams {
  bool enabled = true;  ///< --ecn on|off
  uint64_t kmin_bytes = 20 * 1024;
  uint64_t kmax_bytes = 200 * 1024;
  double pmax = 0.2;
  bool at_dequeue = false;  ///< mark on dequeue (queue left behind) instead of on enqueue
};

/// P(mark) for a queue of `q` bytes: the curve when marking is on, else 0.
inline double mark_probability(const RedParams& p, uint64_t q) {
  if (!p.enabled) return 0.0;
  return dcqcn::red_mark_probability(
      {.kmin_bytes = p.kmin_bytes, .kmax_bytes = p.kmax_bytes, .pmax = p.pmax}, q);
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
