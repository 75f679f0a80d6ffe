/**
 * @file notification_point.h
 * @brief DCQCN notification point of one QP: when to send a CNP for CE-marked packets
 * (docs/dcqcn-pfc.md §1.3). Units: ns (Timestamp/Duration).
 *
 * A CE-marked RoCE packet sends a CNP at once if none was sent in the last
 * min_time_between_cnps (N); otherwise the CNP is coalesced: one pending CNP goes out when the
 * interval ends (last CNP + N). At most one CNP per N per QP. The NP is whoever receives the
 * data: for RDMA READ responses that is the requester. The caller builds the CNP (DestQP = the
 * peer's QPN, IP dst = the marked packet's source) and queues it on the CNP priority, bypassing
 * the pacer. For mstconfig's per-port reading of N, share one NotificationPoint per port.
 */
#pragma once

#include <cstdint>

#include "common/time.h"

namespace uroce::dcqcn {

/// NP counters of one QP (names as mlx5 hw_counters, docs/dcqcn-pfc.md §5.2).
struct NpStats {
  uint64_t np_ecn_marked_roce_packets = 0;  ///< CE-marked packets seen
  uint64_t np_cnp_sent = 0;                 ///< CNPs the caller was told to send
  uint64_t np_cnp_coalesced = 0;            ///< CE packets that did not send a CNP at once
};

/// CNP pacing for one QP.
class NotificationPoint {
 public:
  /// @param min_time_between_cnps N; 0 = a CNP for every CE packet
  explicit NotificationPoint(Duration min_time_between_cnps) : n_(min_time_between_cnps) {}

  /// A CE-marked packet for this QP arrived at `now`. Runs a due timer first.
  /// @return true: send a CNP now.
  bool on_ce_marked(Timestamp now);
  /// When the coalesced CNP is due, or Timestamp::never() if none is pending.
  Timestamp next_deadline() const { return pending_ ? last_cnp_ + n_ : Timestamp::never(); }
  /// @return true: the coalesced CNP is due at or before `now`; send it now.
  bool on_timer(Timestamp now);
  /// Forgets the last CNP and any pending one (counters are kept).
  void reset() { sent_any_ = pending_ = false; }
  const NpStats& stats() const { return stats_; }
  bool pending() const { return pending_; }  ///< a coalesced CNP waits

 private:
  void send(Timestamp now) {
    last_cnp_ = now;
    sent_any_ = true;
    ++stats_.np_cnp_sent;
  }

  Duration n_;             ///< min_time_between_cnps
  Timestamp last_cnp_;     ///< when the last CNP was sent
  bool sent_any_ = false;  ///< a CNP was ever sent
  bool pending_ = false;   ///< a CE arrived inside the interval
  NpStats stats_;
};

}  // namespace uroce::dcqcn
