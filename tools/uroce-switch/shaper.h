/**
 * @file shaper.h
 * @brief Egress token-bucket shaper: a frame of n bytes may leave when the bucket holds at
 * least n bytes of credit; credit grows at rate_bps / 8 bytes per second up to burst_bytes.
 * Frame sizes count the bytes on the wire as the caller gives them (the switch passes the
 * Ethernet frame length without preamble/IFG/FCS). Time is injected. Units: bit/s, bytes, ns.
 */
#pragma once

#include <cstdint>

#include "common/time.h"

namespace uroce::uswitch {

class TokenBucket {
 public:
  /// rate_bps 0 = unshaped (every frame conforms).
  TokenBucket(uint64_t rate_bps, uint64_t burst_bytes, Timestamp now);

  bool unshaped() const { return rate_bps_ == 0; }
  /// True when a frame of `bytes` conforms at `now` (does not consume).
  bool conforms(uint32_t bytes, Timestamp now);
  /// Consumes `bytes` of credit (may go negative by one frame if called without conforms).
  void consume(uint32_t bytes);
  /// Earliest time a frame of `bytes` conforms (now if it already does).
  Timestamp earliest(uint32_t bytes, Timestamp now);
  double credit_bytes() const { return credit_; }

 private:
  void refill(Timestamp now);

  uint64_t rate_bps_;
  double burst_;
  double credit_;
  Timestamp last_;
};

}  // namespace uroce::uswitch
