/**
 * @file congestion.h
 * @brief The seam between the QP engine and congestion control (shared/STYLE.md §11).
 *
 * Each QP owns one QpCongestion object (the DCQCN reaction point + pacer, or NoCongestion).
 * The engine asks it for the earliest send time of the QP's next data packet (the per-QP
 * send-time gate), tells it about every data frame sent and every CNP received, and folds its
 * timer into next_deadline(). The device-wide notification point decides whether a CE-marked
 * packet makes the engine send a CNP. Time is always passed in; nothing here reads a clock.
 * Units: bytes, nanoseconds (Timestamp), bits per second.
 *
 * lib/dcqcn plugs in through CongestionFactory (EngineConfig::cc); the default is a no-op
 * reaction point and a notification point that never asks for a CNP.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/time.h"

namespace uroce::transport {

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
  /// Earliest internal timer (rate increase etc.); Timestamp::never() if none.
  virtual Timestamp next_deadline() const = 0;
  /// Fires internal timers due at now.
  virtual void on_timer(Timestamp now) = 0;
  /// Current rate in bits per second (0 = unlimited), for tools.
  virtual uint64_t rate_bps() const = 0;
  /// Target rate in bits per second (0 = unlimited / none), for tools.
  virtual uint64_t target_rate_bps() const { return rate_bps(); }
  /// DCQCN α at now (0 where there is none), for tools.
  virtual double alpha(Timestamp now) const {
    (void)now;
    return 0;
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

/// The default: never gates, ignores CNPs.
class NoCongestion final : public QpCongestion {
 public:
  Timestamp next_send_time(uint32_t, Timestamp now) const override { return now; }
  void on_packet_sent(uint32_t, Timestamp) override {}
  void on_cnp(Timestamp) override {}
  Timestamp next_deadline() const override { return Timestamp::never(); }
  void on_timer(Timestamp) override {}
  uint64_t rate_bps() const override { return 0; }
};

}  // namespace uroce::transport
