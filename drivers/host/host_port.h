/**
 * @file host_port.h
 * @brief uroce::Port on a kernel netdev the kernel keeps using (host mode, docs/host-mode.md):
 * a device with `netdev = "eth0"`.
 *
 * RoCEv2 frames arrive through DPDK's net_af_xdp PMD, one AF_XDP socket per RX queue of the
 * netdev, fed by uroce's XDP program (drivers/xdp), which leaves every other frame to the
 * kernel. Frames leave through the same sockets, after the shared TX pipeline
 * (drivers/pipeline: priority queues, scheduler, counters, self-loopback). The MAC, the GID
 * table, the link state and the MTU are the netdev's and are followed live through netlink
 * (drivers/netlink: Monitor); the next hop is the kernel's route and its MAC the kernel's
 * neighbour entry (Resolver), never uroce's own ARP/ND.
 *
 * One process owns a netdev at a time (exclusive mode): a second one is refused with one line
 * while the first holds it. When uroce-hostd serves the netdev (tools/uroce-hostd), the port
 * is a memif client of the daemon instead (shared mode): same netlink view, frames through
 * the daemon, QPNs tagged with the process' client slot (LinkState::shared_slot). PFC is the NIC's
 * business on a shared netdev (the kernel's DCB settings); the port sends no PFC frames and the
 * kernel consumes the ones that arrive.
 */
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/port.h"
#include "config/config.h"

namespace uroce::host {

/// Opens the host-mode port of dev (dev.netdev set). On failure returns nullptr and sets *err
/// to one line naming the device, the netdev and the problem (no such netdev, down, no
/// address, a foreign XDP program, in use by another process, the PMD's refusal).
std::unique_ptr<Port> open_host_port(const config::Device& dev, std::string* err);

/// What the port of dev reports, read without opening it (netlink, ethtool; no DPDK), after
/// the checks open_host_port() makes before it touches DPDK (the netdev exists, is up, has an
/// address, an MTU that carries RoCE); nullopt with *err (the same line) when one fails.
/// shared: uroce-hostd serves the netdev, so opening the port is only the memif client.
struct HostView {
  LinkState link;
  uint64_t link_speed_bps = 0;
  bool shared = false;
};
std::optional<HostView> view_host_port(const config::Device& dev, std::string* err);

/// The netdev's link speed as ethtool reports it (what the kernel's RoCE devices report as
/// their port's speed); 10 Gbit/s when it reports none (a veth's 10000 Mb/s is reported).
uint64_t netdev_speed_bps(const std::string& ifname);

}  // namespace uroce::host
