/**
 * @file neighbor_wait.h
 * @brief Blocking neighbour (ARP/ND) resolution for the verbs that create address handles and
 * resolve a GID's L2 address, as rdma-core on RoCE waits for the kernel's neighbour entry
 * instead of failing on the first cache miss.
 *
 * The port's resolve() starts an ARP request / neighbour solicitation on a miss (at most one per
 * 100 ms per address) and returns false; the reply is learned only while RX bursts run. So the
 * wait alternates resolve() with a progress step (RX burst, transmit, flush) and a short pause,
 * until the address resolves or `budget` (default 1 s) has passed.
 *
 * Header-only and parameterised by callables (resolve, step, clock, pause), so the loop is
 * tested with a fake resolver and a fake clock (tests/device/neighbor_wait_test.cc).
 * Units: Duration/Timestamp (ns).
 */
#pragma once

#include "common/time.h"

namespace uroce::device {

/// How long create_ah waits for a neighbour before EHOSTUNREACH, and the pause between tries.
/// Not tuned on timings: the budget is Linux's neighbour retransmit interval (the default
/// net.ipv4.neigh.*.retrans_time_ms is 1000, ip-sysctl.rst), so the first ARP request or
/// neighbour solicitation gets its full interval to be answered before the verbs call gives up
/// (the kernel keeps resolving; a later create_ah finds the entry). The pause lets the
/// progress thread and other callers take the engine lock between tries; 1 ms keeps the
/// number of tries (at most 1000) and their lock traffic small against a reply that on one
/// link takes well under a millisecond.
inline constexpr Duration kNeighborWaitBudget = Duration::seconds(1);
inline constexpr Duration kNeighborWaitPause = Duration::millis(1);

/// Tries `resolve()` (true: resolved); on a miss runs `step()` and tries again, then `pause()`
/// while `now()` is before now() + budget. Returns whether the neighbour resolved.
template <typename Resolve, typename Step, typename Clock, typename Pause>
bool wait_for_neighbor(Resolve&& resolve, Step&& step, Clock&& now, Pause&& pause,
                       Duration budget = kNeighborWaitBudget) {
  const Timestamp end = now() + budget;
  for (;;) {
    if (resolve()) return true;
    step();
    if (resolve()) return true;
    if (now() >= end) return false;
    pause();
  }
}

}  // namespace uroce::device
