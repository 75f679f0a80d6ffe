/**
 * @file np_table.h
 * @brief The notification points of one device, keyed by local QPN: the device-wide NP the
 * transport's seam asks (`on_ce_marked(qpn, now)`), with the timer for coalesced CNPs
 * (docs/dcqcn-pfc.md §1.3). Units: ns.
 *
 * Each QP has its own NotificationPoint (per-QP interval, the paper's and htsim's reading).
 * With `per_port` set, one interval is shared by every QP (mstconfig's "from the port"
 * reading, docs/dcqcn-pfc.md §7): a CE inside the port's interval then waits for the interval end,
 * and the pending CNP goes to the QP whose CE came first.
 */
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "dcqcn/notification_point.h"

namespace uroce::dcqcn {

/// CNP pacing for all QPs of a device.
class NpTable {
 public:
  /// @param min_time_between_cnps N
  /// @param per_port one interval for the whole port instead of one per QP
  explicit NpTable(Duration min_time_between_cnps, bool per_port = false)
      : n_(min_time_between_cnps), per_port_(per_port), port_(min_time_between_cnps) {}

  /// A CE-marked packet for local QP `qpn` arrived. @return true: send a CNP for `qpn` now.
  bool on_ce_marked(uint32_t qpn, Timestamp now);
  /// The earliest pending CNP, or never.
  Timestamp next_deadline() const;
  /// Appends to *due the QPNs whose coalesced CNP is due at `now` (send one CNP each).
  void on_timer(Timestamp now, std::vector<uint32_t>* due);
  /// Drops a destroyed QP's state.
  void forget(uint32_t qpn);
  /// Totals over all QPs.
  NpStats stats() const;

 private:
  Duration n_;
  bool per_port_;
  NotificationPoint port_;         ///< per_port mode
  uint32_t port_pending_qpn_ = 0;  ///< per_port: who gets the pending CNP
  std::unordered_map<uint32_t, NotificationPoint> qps_;
  std::vector<uint32_t> pending_;  ///< QPNs with a coalesced CNP waiting
  NpStats gone_;                   ///< counters of forgotten QPs
};

}  // namespace uroce::dcqcn
