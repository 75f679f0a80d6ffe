/**
 * @file client_port.h
 * @brief The port of a process whose netdev uroce-hostd serves (shared mode,
 * docs/host-mode.md, "Several processes on one netdev"): frames go through the daemon's
 * shared-memory rings (drivers/shm), everything else is the kernel's view of the netdev
 * (drivers/netlink NetdevView), as in exclusive mode. No DPDK, no hugepages, no privileges:
 * the daemon's socket, the region it passes and two eventfds.
 *
 * Open: the netdev's checks (usable_netdev) -> a session with the daemon (control.h: Hello,
 * Welcome with the region and the doorbells; the QPN block) -> the region mapped
 * (MADV_DONTFORK) -> a PortPipeline over a FrameIo on the TX ring, the netlink Monitor.
 * TX: the engine builds each frame in a TX ring buffer, which the pipeline publishes in its
 * priority order (one kick of the daemon's doorbell per burst, only while the daemon sleeps).
 * RX: frames are parsed where they lie in the RX rings (one per daemon worker) and released
 * after the burst. Sleep: wake_fd() is an epoll set of the client's doorbell, the netlink
 * Monitor and the control socket (the daemon going away makes the link down).
 * The link state reports shared_slot (the client number, which is its QPN block) and
 * qpn_block_bits, from which the runtime numbers its QPs.
 *
 * fork: a child inherits neither the rings (MADV_DONTFORK) nor the session: a pthread_atfork
 * child handler closes the inherited socket, doorbells and epoll set of every open shared port
 * and turns the ports inert (no frames, link down); the child opens a port of its own.
 *
 * Thread-safety: one thread at a time (the engine's lock holder), as every Port.
 */
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/port.h"
#include "config/config.h"

namespace uroce::hostd_client {

/// What a host-mode device's port reports, read without opening it (netlink, ethtool): after
/// the checks every host-mode port makes first (the netdev exists, is up, has an address, an
/// MTU that carries RoCE); shared: uroce-hostd serves the netdev (open_shared_port() then
/// opens the port). nullopt with one line in *err (naming the device and netdev) otherwise.
struct HostView {
  LinkState link;
  uint64_t link_speed_bps = 0;
  bool shared = false;
};
std::optional<HostView> view_host_port(const config::Device& dev, std::string* err);

/// Opens dev's port as a client of the uroce-hostd that serves dev.netdev; nullptr with one
/// line in *err (the device, the netdev, the daemon's refusal or the protocol problem).
std::unique_ptr<Port> open_shared_port(const config::Device& dev, std::string* err);

}  // namespace uroce::hostd_client
