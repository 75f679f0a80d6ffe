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
/// No measurement of these values; the pause lets the progress thread and other callers take
/// the engine lock between tries.
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
