/**
 * @file paper_rp.h
 * @brief DCQCN reaction point, SIGCOMM'15 form (`mode = paper`), docs/dcqcn-pfc.md §1.4.
 *
 * Units: rates bit/s (double), bytes, ns. State per QP: current rate Rc, target rate Rt, α,
 * timer count Tcnt, byte count BCcnt, bytes since the last byte-counter event.
 *
 * On a CNP: Rt ← Rc; Rc ← max(R_min, Rc·(1 − α/2)); α ← (1−g)·α + g (order per
 * DcqcnParams::alpha_order); counters and both timers restart. α decays by (1−g) every K
 * after the last CNP (computed in closed form, so no α timer is scheduled). Every T (timer) and
 * every B bytes sent (byte counter) an increase event runs: fast recovery Rc ← (Rt+Rc)/2,
 * additive Rt += R_AI, or hyper Rt += amount·R_HAI (DcqcnParams::fr_count, hai_amount,
 * hai_halves_periods, qcn_first_increase_quirk). Rt and Rc are capped at C.
 */
#pragma once

#include "dcqcn/congestion_control.h"
#include "dcqcn/params.h"

namespace uroce::dcqcn {

/// Paper-mode reaction point of one QP.
class PaperRp final : public CongestionControl {
 public:
  /// @param p parameters (p.mode is not consulted)
  /// @param port_speed_bps line rate; C = rpg_max_rate if set, else this
  PaperRp(const DcqcnParams& p, double port_speed_bps);

  void on_packet_sent(uint32_t bytes, Timestamp now) override;
  void on_cnp(Timestamp now) override;
  void on_timer(Timestamp now) override;
  Timestamp next_deadline() const override { return next_inc_; }
  double rate_bps() const override { return rc_; }
  void reset() override;
  const RpStats& stats() const override { return stats_; }

  double target_rate_bps() const override { return rt_; }  ///< Rt
  double line_rate_bps() const { return c_; }              ///< C
  /// α as it is at `now` (>= the last event's time; earlier times give the current α) (includes the
  /// K-periodic decay up to and including `now`).
  double alpha_at(Timestamp now) const override;
  bool active() const { return active_; }         ///< a CNP arrived and the rate is limited
  uint32_t timer_count() const { return tcnt_; }  ///< Tcnt
  uint32_t byte_count() const { return bccnt_; }  ///< BCcnt

 private:
  bool in_hyper() const;
  void increase(Timestamp at, bool by_bytes);
  Duration timer_period() const;
  uint64_t byte_threshold() const;
  void record(Timestamp at, RpEventKind k, bool by_bytes);

  DcqcnParams p_;
  double c_;                          ///< line rate C, bit/s
  double g_;                          ///< α gain
  Duration k_;                        ///< α period K
  double rc_, rt_;                    ///< current / target rate, bit/s
  double alpha_base_ = 1.0;           ///< α right after the last CNP
  Timestamp alpha_epoch_;             ///< time of the last CNP (α decay grid origin)
  bool alpha_running_ = false;        ///< a CNP has started the α decay (it runs on after release)
  bool active_ = false;               ///< limiter engaged
  bool increased_since_cut_ = false;  ///< for the QCN first-increase quirk
  uint32_t tcnt_ = 0, bccnt_ = 0;
  uint64_t bytes_acc_ = 0;
  Timestamp next_inc_ = Timestamp::never();  ///< next timer increase event
  RpStats stats_;
};

}  // namespace uroce::dcqcn
