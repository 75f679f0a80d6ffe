/**
 * @file congestion.h
 * @brief The device's congestion control for the engine (EngineConfig::cc), built from the
 * configuration's [device.dcqcn] table: DCQCN reaction point + pacer per QP and a CNP-pacing
 * notification point (lib/dcqcn), or nothing when dcqcn.enabled = false.
 * Units: bit/s, bytes, ns (µs for min_time_between_cnps, as lib/dcqcn).
 */
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "transport/congestion.h"

namespace uroce::verbs {

/// The factory for dev, or nullptr when DCQCN is disabled. A bad parameter (lib/config
/// validates names and signs; lib/dcqcn ranges) returns nullptr with *err set to one line.
std::unique_ptr<transport::CongestionFactory> make_congestion(const config::Device& dev,
                                                              std::string* err);

}  // namespace uroce::verbs
