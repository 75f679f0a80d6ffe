/**
 * @file dcqcn_cc.h
 * @brief DCQCN on simulated hosts: the engine's congestion-control seam filled by lib/dcqcn,
 * through the same adapter lib/verbs uses (transport::DcqcnCongestionFactory: per-QP reaction
 * point + pacer, device-wide notification point at most one CNP per min_time_between_cnps per
 * QP). Scenarios sample each QP's rate through qp(qpn). Units: bit/s, bytes, ns.
 */
#pragma once

#include "transport/dcqcn_congestion.h"

namespace uroce::sim {

using DcqcnFactory = transport::DcqcnCongestionFactory;

}  // namespace uroce::sim
