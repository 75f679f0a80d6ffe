/**
 * @file congestion.h
 * @brief The device's congestion control for the engine (EngineConfig::cc), built from the
 * configuration: congestion_control, [device.dcqcn] and [device.delay] (lib/cc factory.h), or
 * nothing when the device runs none. Units: bit/s, bytes, ns.
 */
#pragma once

#include <memory>
#include <string>

#include "cc/congestion.h"
#include "config/config.h"

namespace uroce::device {

/// The factory for dev, or nullptr when it runs no congestion control. A bad parameter
/// (lib/config validates names and ranges; lib/dcqcn its own) returns nullptr with *err set
/// to one line.
std::unique_ptr<cc::CongestionFactory> make_congestion(const config::Device& dev, std::string* err);

}  // namespace uroce::device
