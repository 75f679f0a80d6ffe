/**
 * @file reaction_point.h
 * @brief Builds the per-QP congestion control a DcqcnParams asks for (the transport's entry
 * point into lib/dcqcn). Units: bit/s.
 */
#pragma once

#include <memory>

#include "dcqcn/congestion_control.h"
#include "dcqcn/nvidia_rp.h"
#include "dcqcn/paper_rp.h"
#include "dcqcn/params.h"

namespace uroce::dcqcn {

/// A PaperRp, an NvidiaRp or a NoCc (RpMode::kOff), per p.mode.
/// @param port_speed_bps line rate of the port (C unless p.rpg_max_rate is set)
inline std::unique_ptr<CongestionControl> make_congestion_control(const DcqcnParams& p,
                                                                  double port_speed_bps) {
  switch (p.mode) {
    case RpMode::kPaper: return std::make_unique<PaperRp>(p, port_speed_bps);
    case RpMode::kNvidia: return std::make_unique<NvidiaRp>(p, port_speed_bps);
    case RpMode::kOff: break;
  }
  return std::make_unique<NoCc>();
}

}  // namespace uroce::dcqcn
