/**
 * @file qp_congestion.h
 * @brief Everything DCQCN keeps per QP, in one object for the transport: the reaction point
 * (rate from CNPs), the pacer that gates data at that rate, and the notification point (when to
 * send CNPs for CE-marked packets). Units: bit/s, bytes, ns. Sans-IO: every call carries `now`.
 *
 * The transport's seam (dcqcn.md §1.3–1.5; shared/STYLE.md §11):
 * - CNP received for this QP (BTH opcode 0x81, DestQP = this QP)  → on_cnp(now)
 * - data packet (ECT(0)) about to go out                          → earliest_send_time(bytes, now)
 *   gates it; when it leaves                                      → on_data_sent(bytes, now)
 * - CE-marked packet received on this QP                          → if on_ce_marked(now), send a
 *   CNP now (priority 6 / DSCP 48, never through the pacer)
 * - timers: next_deadline(); on_timer(now) returns true when a coalesced CNP must go now.
 * Retransmissions are data too (they pass the gate). ACKs/NAKs and CNPs do not.
 */
#pragma once

#include <memory>

#include "dcqcn/notification_point.h"
#include "dcqcn/pacer.h"
#include "dcqcn/reaction_point.h"

namespace uroce::dcqcn {

/// DCQCN state of one QP.
class QpCongestion {
 public:
  /// @param p parameters (p.mode kOff: no rate limit, the NP still paces CNPs)
  /// @param port_speed_bps line rate of the port
  /// @param burst_bytes pacer bucket depth (bytes that may leave back to back)
  QpCongestion(const DcqcnParams& p, double port_speed_bps, uint64_t burst_bytes = 0)
      : rp_(make_congestion_control(p, port_speed_bps)),
        np_(Duration::micros(p.min_time_between_cnps)),
        pacer_(burst_bytes) {
    sync();
  }

  /// A CNP for this QP arrived.
  void on_cnp(Timestamp now) {
    rp_->on_cnp(now);
    sync();
  }
  /// The earliest time a data frame of `bytes` may start.
  Timestamp earliest_send_time(uint32_t bytes, Timestamp now) const {
    return pacer_.earliest_send_time(bytes, now);
  }
  /// A data frame of `bytes` started at `now`: charges the pacer, feeds the byte counter.
  void on_data_sent(uint32_t bytes, Timestamp now) {
    pacer_.on_sent(bytes, now);
    rp_->on_packet_sent(bytes, now);
    sync();
  }
  /// A CE-marked packet arrived on this QP. @return true: send a CNP to the peer now.
  bool on_ce_marked(Timestamp now) { return np_.on_ce_marked(now); }
  /// The earliest RP timer or pending-CNP time, or never.
  Timestamp next_deadline() const { return earliest(rp_->next_deadline(), np_.next_deadline()); }
  /// Runs due RP timers. @return true: a coalesced CNP is due; send it now.
  bool on_timer(Timestamp now) {
    rp_->on_timer(now);
    sync();
    return np_.on_timer(now);
  }
  /// Back to line rate, no CNP history (e.g. on QP reset); counters are kept.
  void reset() {
    rp_->reset();
    np_.reset();
    pacer_.reset();
    sync();
  }

  double rate_bps() const { return rp_->rate_bps(); }  ///< current RP rate
  CongestionControl& rp() { return *rp_; }             ///< the reaction point
  const CongestionControl& rp() const { return *rp_; }
  const NotificationPoint& np() const { return np_; }  ///< the notification point
  const Pacer& pacer() const { return pacer_; }        ///< the send-time gate

 private:
  void sync() { pacer_.set_rate(rp_->rate_bps()); }

  std::unique_ptr<CongestionControl> rp_;
  NotificationPoint np_;
  Pacer pacer_;
};

}  // namespace uroce::dcqcn
