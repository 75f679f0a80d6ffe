/**
 * @file congestion_control.h
 * @brief The per-QP congestion-control seam the transport calls (docs/design.md, "Principles"), the
 * NoCc implementation, the RP counters and the optional event trace.
 *
 * Units: rates in bit/s (double, so the DCQCN arithmetic of docs/dcqcn-pfc.md §1.4–1.6 is exact to
 * rounding), bytes, Timestamp/Duration in ns. Nothing here reads a clock: every event carries
 * `now`, and timers are the caller's job through next_deadline()/on_timer().
 *
 * Calling contract (same for every implementation):
 * - `now` never decreases from one call to the next on one object.
 * - on_cnp()/on_packet_sent() first run every timer due at or before `now` (as if on_timer(now)
 *   had been called), so at one instant timers come before the CNP or the bytes.
 * - on_timer(now) may be called late; it runs every due timer in time order.
 * - The transport paces the QP's data at rate_bps() (see pacer.h). CNPs bypass the pacer.
 */
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "common/time.h"

namespace uroce::dcqcn {

/// rate_bps() of an unlimited sender.
inline constexpr double kUnlimitedRate = std::numeric_limits<double>::infinity();

/// Reaction-point counters of one QP (names after docs/dcqcn-pfc.md §5.2; the rp_* custom ones are
/// ours).
struct RpStats {
  uint64_t rp_cnp_handled = 0;           ///< CNPs handled (each CNP passed to on_cnp)
  uint64_t rp_cnp_ignored = 0;           ///< CNPs ignored (NoCc: the RP is disabled)
  uint64_t rp_cnp_coalesced = 0;         ///< CNPs that caused no cut of their own (nvidia: more
                                         ///< than one CNP inside one monitor period)
  uint64_t rp_rate_decrease_events = 0;  ///< rate cuts
  uint64_t rp_rate_increase_fr = 0;      ///< increase events in fast recovery
  uint64_t rp_rate_increase_ai = 0;      ///< additive increase events
  uint64_t rp_rate_increase_hai = 0;     ///< hyper increase events
  uint64_t rp_limiter_released = 0;      ///< times the rate reached C and the limiter was released
};

/// What happened, for traces and golden tests.
enum class RpEventKind : uint8_t {
  kCut,           ///< rate decrease
  kFastRecovery,  ///< increase event, fast recovery
  kAdditive,      ///< increase event, additive increase
  kHyper,         ///< increase event, hyper increase
  kRelease,       ///< Rc == Rt == C: timers stopped, limiter released
};

/// One RP state change. `by_bytes` tells a byte-counter increase from a timer one.
struct RpEvent {
  Timestamp at;      ///< when it happened (the timer's deadline, not the call's `now`)
  RpEventKind kind;  ///< what
  bool by_bytes;     ///< increase triggered by the byte counter
  double rc_bps;     ///< current rate after the event
  double rt_bps;     ///< target rate after the event
  double alpha;      ///< α at the event
};

/// The per-QP congestion-control interface (the transport's seam).
class CongestionControl {
 public:
  virtual ~CongestionControl() = default;

  /// `bytes` of this QP's data left the host at `now` (whole frames; feeds the byte counter).
  virtual void on_packet_sent(uint32_t bytes, Timestamp now) = 0;
  /// A CNP for this QP arrived at `now`.
  virtual void on_cnp(Timestamp now) = 0;
  /// Runs every timer due at or before `now`.
  virtual void on_timer(Timestamp now) = 0;
  /// The earliest time on_timer() has work, or Timestamp::never().
  virtual Timestamp next_deadline() const = 0;
  /// The rate the QP may send at, bit/s; kUnlimitedRate for no limit.
  virtual double rate_bps() const = 0;
  /// The target rate Rt, bit/s (for tools); implementations without one report rate_bps().
  virtual double target_rate_bps() const { return rate_bps(); }
  /// α as it is at `now` (for tools); 0 where there is none.
  virtual double alpha_at(Timestamp now) const {
    (void)now;
    return 0;
  }
  /// Back to the initial state (line rate, no CNP seen); counters are kept.
  virtual void reset() = 0;
  /// Counters.
  virtual const RpStats& stats() const = 0;

  /// Test/trace hook: every RpEvent is appended to *sink (nullptr = off). Not owned.
  void set_trace(std::vector<RpEvent>* sink) { trace_ = sink; }

 protected:
  std::vector<RpEvent>* trace_ = nullptr;  ///< optional event sink
};

/// No congestion control: unlimited rate, no timers. For tests and for `mode = "off"`.
class NoCc final : public CongestionControl {
 public:
  void on_packet_sent(uint32_t, Timestamp) override {}
  void on_cnp(Timestamp) override { ++stats_.rp_cnp_ignored; }
  void on_timer(Timestamp) override {}
  Timestamp next_deadline() const override { return Timestamp::never(); }
  double rate_bps() const override { return kUnlimitedRate; }
  void reset() override {}
  const RpStats& stats() const override { return stats_; }

 private:
  RpStats stats_;
};

}  // namespace uroce::dcqcn
