/**
 * @file egress_queues.cc
 * @brief EgressQueues (see egress_queues.h). Units: bytes.
 */
#include "uroce-switch/egress_queues.h"

#include <algorithm>

namespace uroce::uswitch {

bool EgressQueues::push(const QueuedFrame& f) {
  if (total_ + f.len > limit_) return false;
  q_[f.prio].push_back(f);
  bytes_[f.prio] += f.len;
  total_ += f.len;
  high_water_ = std::max(high_water_, total_);
  return true;
}

int EgressQueues::next_prio(uint8_t paused_mask) const {
  for (int p = kPrios - 1; p >= 0; --p)
    if (!q_[p].empty() && !(paused_mask & (1u << p))) return p;
  return -1;
}

QueuedFrame EgressQueues::pop(int prio) {
  QueuedFrame f = q_[prio].front();
  q_[prio].pop_front();
  bytes_[prio] -= f.len;
  total_ -= f.len;
  return f;
}

size_t EgressQueues::frames() const {
  size_t n = 0;
  for (const auto& q : q_) n += q.size();
  return n;
}

}  // namespace uroce::uswitch
