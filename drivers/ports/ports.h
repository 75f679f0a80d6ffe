/**
 * @file ports.h
 * @brief open_port(): the port a device's configuration names, from whichever driver this
 * build has (drivers/loopback, drivers/host, drivers/dpdk). The libibverbs.so.1 composition
 * root (lib/device runtime.cc) calls it; the engine sees only the common/port.h interface.
 */
#pragma once

#include <memory>
#include <string>

#include "common/port.h"
#include "config/config.h"

namespace uroce {

/// Opens the port a device's configuration names. On failure returns nullptr and sets *err to
/// one line naming the problem.
std::unique_ptr<Port> open_port(const config::Device& dev, std::string* err);

}  // namespace uroce
