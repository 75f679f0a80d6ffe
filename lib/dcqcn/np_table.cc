/**
 * @file np_table.cc
 * @brief Device-wide CNP pacing over per-QP notification points (docs/dcqcn-pfc.md §1.3). Units:
 * ns.
 */
#include "dcqcn/np_table.h"

#include <algorithm>

namespace uroce::dcqcn {

bool NpTable::on_ce_marked(uint32_t qpn, Timestamp now) {
  if (per_port_) {
    const bool was_pending = port_.pending();
    const bool send = port_.on_ce_marked(now);
    if (!send && !was_pending) port_pending_qpn_ = qpn;
    return send;
  }
  auto [it, inserted] = qps_.try_emplace(qpn, n_);
  NotificationPoint& np = it->second;
  const bool was_pending = np.pending();
  const bool send = np.on_ce_marked(now);
  if (np.pending() && !was_pending) pending_.push_back(qpn);
  if (!np.pending() && was_pending)
    pending_.erase(std::find(pending_.begin(), pending_.end(), qpn));
  return send;
}

Timestamp NpTable::next_deadline() const {
  if (per_port_) return port_.next_deadline();
  Timestamp t = Timestamp::never();
  for (uint32_t q : pending_) t = earliest(t, qps_.at(q).next_deadline());
  return t;
}

void NpTable::on_timer(Timestamp now, std::vector<uint32_t>* due) {
  if (per_port_) {
    if (port_.on_timer(now)) due->push_back(port_pending_qpn_);
    return;
  }
  for (size_t i = 0; i < pending_.size();) {
    const uint32_t q = pending_[i];
    if (qps_.at(q).on_timer(now)) {
      due->push_back(q);
      pending_[i] = pending_.back();
      pending_.pop_back();
    } else {
      ++i;
    }
  }
}

void NpTable::forget(uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) return;
  const NpStats& s = it->second.stats();
  gone_.np_ecn_marked_roce_packets += s.np_ecn_marked_roce_packets;
  gone_.np_cnp_sent += s.np_cnp_sent;
  gone_.np_cnp_coalesced += s.np_cnp_coalesced;
  auto p = std::find(pending_.begin(), pending_.end(), qpn);
  if (p != pending_.end()) pending_.erase(p);
  qps_.erase(it);
}

NpStats NpTable::stats() const {
  NpStats t = per_port_ ? port_.stats() : gone_;
  if (per_port_) return t;
  for (const auto& [q, np] : qps_) {
    t.np_ecn_marked_roce_packets += np.stats().np_ecn_marked_roce_packets;
    t.np_cnp_sent += np.stats().np_cnp_sent;
    t.np_cnp_coalesced += np.stats().np_cnp_coalesced;
  }
  return t;
}

}  // namespace uroce::dcqcn
