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
 * while the first holds it. uroce-hostd opens its netdev through this port too; the processes
 * it serves use drivers/hostd_client's port instead (no DPDK). PFC is the NIC's business on a
 * shared netdev (the kernel's DCB settings); the port sends no PFC frames and the kernel consumes
 * the ones that arrive.
 */
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/port.h"
#include "config/config.h"

namespace uroce::host {

/// Opens the host-mode port of dev (dev.netdev set). On failure returns nullptr and sets *err
/// to one line naming the device, the netdev and the problem (no such netdev, down, no
/// address, a foreign XDP program, in use by another process, the PMD's refusal).
std::unique_ptr<Port> open_host_port(const config::Device& dev, std::string* err);

/// The host-mode port of dev split for `workers` threads (uroce-hostd's workers): port k of the
/// result receives from the netdev's RX queues q with q % n == k and sends on them, through
/// a TX pipeline and a netlink view of its own, so that each is used by its own thread (n =
/// the result's size: `workers`, at most the netdev's active RX queues). The netdev is
/// released when the last of them is destroyed. Empty with *err as open_host_port().
std::vector<std::unique_ptr<Port>> open_host_ports(const config::Device& dev, unsigned workers,
                                                   std::string* err);

}  // namespace uroce::host
