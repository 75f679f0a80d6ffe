/**
 * @file red.h
 * @brief The RED/ECN marking curve of a DCQCN congestion point, a switch egress queue (the CP
 * algorithm of Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM
 * 2015): on the instantaneous queue q, P(mark) = 0 for q <= kmin, pmax * (q - kmin) /
 * (kmax - kmin) for kmin < q < kmax, 1 for q >= kmax. A marker sets CE only on ECT(0)/ECT(1)
 * packets (RFC 3168). The one curve of the simulator's switch (sim/switch.h) and uroce-switch
 * (tools/uroce-switch/red.h); each draws its own random numbers. Units: bytes; probability in
 * [0, 1].
 */
#pragma once

#include <cstdint>

namespace uroce::dcqcn {

/// Kmin, Kmax and Pmax of a congestion point.
struct RedCurve {
  uint64_t kmin_bytes = 0;
  uint64_t kmax_bytes = 0;
  double pmax = 0;
};

/// P(mark) for an egress queue of `q` bytes.
constexpr double red_mark_probability(const RedCurve& c, uint64_t q) {
  if (q <= c.kmin_bytes) return 0.0;
  if (q >= c.kmax_bytes) return 1.0;
  return c.pmax * static_cast<double>(q - c.kmin_bytes) /
         static_cast<double>(c.kmax_bytes - c.kmin_bytes);
}

}  // namespace uroce::dcqcn
