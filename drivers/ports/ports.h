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

/// What a port reports before it is opened (its link state, GID table, MTU, speed).
struct PortView {
  LinkState link;
  uint64_t link_speed_bps = 0;
};

/// Whether dev's port may be opened later, at its first use, because what it reports can be
/// read without opening it and opening it claims nothing a query could be refused for: a
/// host-mode device whose netdev uroce-hostd serves (opening it is only the session with the
/// daemon). Then *view is what the port reports (netlink, ethtool; no DPDK).
enum class Deferral {
  kOpenNow,   ///< any other device: open the port now (where it claims the netdev or NIC)
  kDeferred,  ///< *view filled; open_port() later
  kRefused,   ///< *err: what open_port() would refuse without DPDK (no netdev, down, ...)
};
Deferral defer_port(const config::Device& dev, PortView* view, std::string* err);

}  // namespace uroce
