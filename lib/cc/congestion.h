/**
 * @file congestion.h
 * @brief The one seam between the QP engine and congestion control.
 *
 * Each QP owns one QpCongestion (its reaction point and pacer); the device owns one
 * NotificationPoint (whether a CE-marked packet makes the engine send a CNP). The engine asks
 * the QP's object for the earliest send time of its next data packet, tells it about every data
 * frame sent, every CNP received and every round-trip time it measured, and folds its timer into
 * its own deadline. Time is always passed in; nothing here reads a clock.
 * Units: bytes, nanoseconds (Timestamp/Duration), bits per second.
 *
 * Implementations: cc::Factory (factory.h) builds DCQCN (lib/dcqcn), the delay-based control
 * (delay.h), both at once, or none; with no factory the engine never paces and never sends CNPs.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/cc_algorithm.h"
#include "common/time.h"

namespace uroce::cc {

/// What a QP's congestion control is doing, as tools show it. Rates in bit/s, 0 = unlimited;
/// delays in ns, 0 = none measured.
struct QpCcState {
  CcAlgorithm algorithm = CcAlgorithm::kOff;
  uint64_t rate_bps = 0;         ///< the rate in force (the pacer's)
  uint64_t target_rate_bps = 0;  ///< DCQCN target rate Rt
  double alpha = 0;              ///< DCQCN α
  uint64_t delay_rate_bps = 0;   ///< the delay-based control's rate
  int64_t rtt_ns = 0;            ///< last round-trip sample
  int64_t base_rtt_ns = 0;       ///< the path's base round trip (smallest sample, or configured)
  int64_t target_delay_ns = 0;   ///< base + allowed queueing: above it the delay control cuts
  bool delay_in_force = false;   ///< the delay-based rate is the lower one (it limits the QP)
};

/// Per-QP reaction point + pacer.
class QpCongestion {
 public:
  virtual ~QpCongestion() = default;
  /// Earliest time the QP may send its next data packet of `bytes` (whole frame); a value
  /// <= now means "now". ACKs, NAKs, read responses are not gated.
  virtual Timestamp next_send_time(uint32_t bytes, Timestamp now) const = 0;
  /// A data frame of `bytes` (whole frame) left the QP.
  virtual void on_packet_sent(uint32_t bytes, Timestamp now) = 0;
  /// A CNP for this QP arrived (rp_cnp_handled is counted by the engine).
  virtual void on_cnp(Timestamp now) = 0;
  /// The requester measured one round trip: a request packet sent `rtt` before now was
  /// acknowledged (first transmissions only).
  virtual void on_rtt(Duration rtt, Timestamp now) {
    (void)rtt;
    (void)now;
  }
  /// The requester found a packet lost (a sequence NAK, a timeout, a hole selective repeat
  /// found): one call per loss event.
  virtual void on_loss(Timestamp now) { (void)now; }
  /// Earliest internal timer (rate increase etc.); Timestamp::never() if none.
  virtual Timestamp next_deadline() const = 0;
  /// Fires internal timers due at now.
  virtual void on_timer(Timestamp now) = 0;
  /// The rate in force in bits per second (0 = unlimited).
  virtual uint64_t rate_bps() const = 0;
  /// Everything tools show, at now.
  virtual QpCcState state(Timestamp now) const {
    (void)now;
    QpCcState s;
    s.rate_bps = s.target_rate_bps = rate_bps();
    return s;
  }
};

/// Device-wide notification point: decides CNP generation.
class NotificationPoint {
 public:
  virtual ~NotificationPoint() = default;
  /// A CE-marked RoCE packet arrived for local QP `qpn` (np_ecn_marked_roce_packets is counted
  /// by the engine). Returns true when a CNP should be sent to the packet's source QP now.
  virtual bool on_ce_marked(uint32_t qpn, Timestamp now) = 0;
  /// When the earliest coalesced CNP (a CE inside the interval) is due; never if none.
  virtual Timestamp next_deadline() const { return Timestamp::never(); }
  /// Appends to *due the local QPNs whose coalesced CNP is due at now (one CNP each).
  virtual void on_timer(Timestamp now, std::vector<uint32_t>* due) {
    (void)now;
    (void)due;
  }
  /// A QP was destroyed: drop its state.
  virtual void forget(uint32_t qpn) { (void)qpn; }
};

/// Makes the per-QP and device-wide objects. Owned by the caller; must outlive the engine.
class CongestionFactory {
 public:
  virtual ~CongestionFactory() = default;
  /// Called from create_qp (RC and UC QPs; UD QPs too). link_speed_bps is the port speed.
  virtual std::unique_ptr<QpCongestion> make_qp(uint32_t qpn, uint64_t link_speed_bps) = 0;
  /// Called once by the engine constructor; nullptr means "never send CNPs".
  virtual std::unique_ptr<NotificationPoint> make_np() = 0;
};

/// The default: never gates, ignores CNPs and round trips.
class NoCongestion final : public QpCongestion {
 public:
  Timestamp next_send_time(uint32_t, Timestamp now) const override { return now; }
  void on_packet_sent(uint32_t, Timestamp) override {}
  void on_cnp(Timestamp) override {}
  Timestamp next_deadline() const override { return Timestamp::never(); }
  void on_timer(Timestamp) override {}
  uint64_t rate_bps() const override { return 0; }
};

}  // namespace uroce::cc
