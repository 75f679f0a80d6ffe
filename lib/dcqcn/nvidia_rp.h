/**
 * @file nvidia_rp.h
 * @brief DCQCN reaction point, NVIDIA firmware form (`mode = nvidia`), docs/dcqcn-pfc.md §1.5: the
 * HPCC simulator's "Mellanox version" (rdma-hw.cc cnp_received_mlx, UpdateAlphaMlx,
 * CheckRateDecreaseMlx, RateIncEventTimerMlx) with the firmware parameter semantics.
 *
 * Units: rates bit/s (double), bytes, ns; parameters as DcqcnParams documents them.
 *
 * - The first CNP sets α = initial_alpha_value/1024 (without the CNP's +g) and optionally
 *   Rc = Rt = rate_to_set_on_first_cnp, and starts two grids at its time t0: α updates every
 *   dce_tcp_rtt (α ← (1−g)·α, + g if a CNP arrived in the period) and rate-decrease checks
 *   every rate_reduce_monitor_period.
 * - A decrease check that finds a CNP since the last check cuts once:
 *   Rt ← Rc if clamp_tgt_rate, or (clamp_tgt_rate_after_time_inc and an increase event
 *   happened since the last cut), or (neither flag and a byte-counter increase happened);
 *   Rc ← max(rpg_min_rate, Rc·max(1 − α/2^(rpg_gd−10), rpg_min_dec_fac/100)); stage ← 0;
 *   the increase timer restarts and the byte counter clears. Further CNPs in the same period
 *   are coalesced (RpStats::rp_cnp_coalesced).
 * - Increase events (timer every rpg_time_reset after the cut; every rpg_byte_reset bytes if
 *   non-zero) share one stage counter: stage < rpg_threshold fast recovery, == AI
 *   (Rt += rpg_ai_rate), > HAI (Rt += rpg_hai_rate, constant); Rt ≤ C; Rc ← (Rc+Rt)/2; stage++.
 * - At one instant: α update, then CNP, then decrease check, then increase timer (the order
 *   of the reference model dcqcn_golden.py). α is computed in closed form; only the decrease
 *   check and the increase timer are scheduled.
 */
#pragma once

#include "dcqcn/congestion_control.h"
#include "dcqcn/params.h"

namespace uroce::dcqcn {

/// NVIDIA-mode reaction point of one QP.
class NvidiaRp final : public CongestionControl {
 public:
  /// @param p parameters (p.mode is not consulted)
  /// @param port_speed_bps line rate; C = rpg_max_rate if set, else this
  NvidiaRp(const DcqcnParams& p, double port_speed_bps);

  void on_packet_sent(uint32_t bytes, Timestamp now) override;
  void on_cnp(Timestamp now) override;
  void on_timer(Timestamp now) override;
  Timestamp next_deadline() const override { return earliest(next_dec_, next_inc_); }
  double rate_bps() const override { return rc_; }
  void reset() override;
  const RpStats& stats() const override { return stats_; }

  double target_rate_bps() const override { return rt_; }  ///< Rt
  double line_rate_bps() const { return c_; }              ///< C
  /// α as it is at `now` (>= the last event's time; earlier times give the current α): every α
  /// update due at or before `now` applied.
  double alpha_at(Timestamp now) const override;
  uint32_t stage() const { return stage_; }  ///< increase events since the last cut
  bool active() const { return active_; }    ///< a CNP arrived and the rate is limited

 private:
  void advance_alpha(Timestamp now);
  void decrease(Timestamp at);
  void increase(Timestamp at, bool by_bytes);
  void record(Timestamp at, RpEventKind k, bool by_bytes);

  DcqcnParams p_;
  double c_;                         ///< line rate C, bit/s
  double g_;                         ///< α gain
  Duration t_alpha_;                 ///< dce_tcp_rtt
  Duration t_dec_;                   ///< rate_reduce_monitor_period
  Duration t_inc_;                   ///< rpg_time_reset
  double rc_, rt_;                   ///< current / target rate, bit/s
  bool active_ = false;              ///< a first CNP started the grids; false again on release
  Timestamp epoch_;                  ///< time of the first CNP: origin of both grids
  double alpha_ = 1.0;               ///< α after alpha_ticks_ updates
  int64_t alpha_ticks_ = 0;          ///< α updates applied since epoch_
  bool cnp_for_alpha_ = false;       ///< a CNP arrived since the last α update
  bool cnp_for_dec_ = false;         ///< a CNP arrived since the last decrease check
  bool byte_inc_since_cut_ = false;  ///< a byte-counter increase happened since the last cut
  uint32_t stage_ = 0;
  uint64_t bytes_acc_ = 0;
  Timestamp next_dec_ = Timestamp::never();  ///< next decrease check with a CNP pending
  Timestamp next_inc_ = Timestamp::never();  ///< next timer increase event
  RpStats stats_;
};

}  // namespace uroce::dcqcn
