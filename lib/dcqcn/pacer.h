/**
 * @file pacer.h
 * @brief Per-QP send-time gate at the reaction point's rate: a token bucket in GCRA form
 * (virtual scheduling), driven by the injected clock. Units: bit/s, bytes, ns; the theoretical
 * arrival time keeps a sub-nanosecond remainder so rounding does not drift the rate.
 *
 * A frame of b bytes may start at earliest_send_time(b, now); on_sent(b, now) then charges
 * b·8/rate. Up to `burst_bytes` may go back to back after an idle period (the bucket depth).
 * Rate changes apply from the next on_sent (the debt already charged stands). CNPs and other
 * control frames do not go through the pacer (docs/dcqcn-pfc.md §1.3: the CNP bypasses the
 * limiter).
 */
#pragma once

#include <cstdint>

#include "common/time.h"

namespace uroce::dcqcn {

/// Token-bucket pacer of one QP.
class Pacer {
 public:
  /// @param burst_bytes bucket depth: bytes that may leave back to back (>= 0)
  explicit Pacer(uint64_t burst_bytes = 0) : burst_bytes_(burst_bytes) {}

  /// Sets the rate in bit/s; kUnlimitedRate (or any non-finite / <= 0 value) disables pacing.
  void set_rate(double rate_bps);
  double rate_bps() const { return rate_bps_; }

  /// The earliest time a frame of `bytes` may start (>= now).
  Timestamp earliest_send_time(uint32_t bytes, Timestamp now) const;
  /// A frame of `bytes` started at `now` (now >= earliest_send_time(bytes, now) expected; an
  /// early send is charged all the same).
  void on_sent(uint32_t bytes, Timestamp now);
  /// Forgets the history: the next frame may go at once.
  void reset() {
    tat_ns_ = INT64_MIN / 2;
    tat_frac_ns_ = 0;
  }

 private:
  double cost_ns(uint64_t bytes) const;

  double rate_bps_ = 0.0;           ///< 0 = unlimited
  uint64_t burst_bytes_;            ///< bucket depth
  int64_t tat_ns_ = INT64_MIN / 2;  ///< theoretical arrival time of the next frame, ns part
  double tat_frac_ns_ = 0;          ///< and its fractional part, [0, 1) ns
};

}  // namespace uroce::dcqcn
