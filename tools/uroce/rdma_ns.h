/**
 * @file rdma_ns.h
 * @brief `uroce rdma-ns`: the kernel RDMA files that UCX looks for, for the uroce devices.
 *
 * UCX (1.13, Debian 12's libucx0) reads what a kernel RDMA driver would publish:
 *  - it lists an ibv device only when /dev/infiniband/<dev_name> exists, is a character device
 *    and is readable and writable (it stat()s and access()es it, never opens it); uroce names
 *    device i of the configuration `uverbs<i>` (ibv_device.dev_name, lib/verbs/device.cc);
 *  - it takes a GID's RoCE version from /sys/class/infiniband/<dev>/ports/1/gid_attrs/types/<i>
 *    ("RoCE v2"), never from the verbs; without the file it assumes RoCE v1 and then finds
 *    peers that advertise v2 (a RoCE NIC, rxe) unreachable;
 *  - it takes the netdev of a RoCE GID from .../ports/1/gid_attrs/ndevs/<i> (its bonding for
 *    the number of paths, and with UCX_IB_ROCE_LOCAL_SUBNET=y its subnet mask); without the
 *    file it assumes one path and every peer reachable.
 *
 *   uroce rdma-ns                 what exists, and the commands that create the device nodes
 *   uroce rdma-ns -- CMD ARGS...  runs CMD in a private mount namespace in which the nodes and
 *                                 the sysfs files exist (overlays on /dev and /sys/class; the
 *                                 host's own /dev and /sys are untouched)
 *
 * The nodes made here are aliases of /dev/null (char 1:3); the sysfs files are
 * ports/1/gids/<i> and ports/1/gid_attrs/types/<i> ("RoCE v2", or "IB/RoCE v1" for the RoCE v1
 * GIDs that [device] roce_v1 adds after them) per GID, and ports/1/link_layer ("Ethernet"). A
 * host-mode device (`netdev =`) gets what the kernel shows for rxe on that netdev: its GIDs are the
 * netdev's addresses (as uroce orders them, netlink/netdev.h) with gid_attrs/ndevs/<i> naming the
 * netdev, ports/1/state and phys_state from the netdev's state, `parent` (rxe's name of its
 * netdev) and device/net/<netdev> (a symlink to the netdev's sysfs folder: a RoCE NIC's
 * `device` is its PCI function, whose net/ folder holds its netdevs). What already exists (a
 * real RDMA driver's) is left as it is.
 */
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "netlink/netdev.h"

namespace uroce::tool {

struct RdmaNsOptions {
  std::vector<std::string> argv;  ///< the command to run; empty: report only
};

/// The device node paths for `count` devices: /dev/infiniband/uverbs0 ...
std::vector<std::string> devnode_paths(int count);

/// The sysfs files of one device, as (path below /sys/class/infiniband, contents). host: the
/// state of a host-mode device's netdev (its GIDs replace the configured addresses).
std::vector<std::pair<std::string, std::string>> sysfs_files(
    const config::Device& d, const netlink::NetdevState* host = nullptr);

/// The sysfs symlinks of one device, as (path below /sys/class/infiniband, target). A host-mode
/// device gets device/net/<netdev> -> /sys/class/net/<netdev>: where rdma-core's test suite
/// (tests/base.py) and other tools look for a RoCE device's netdev.
std::vector<std::pair<std::string, std::string>> sysfs_links(
    const config::Device& d, const netlink::NetdevState* host = nullptr);

/// Runs the subcommand. Returns the exit status (with a command: only on failure, since the
/// command replaces this process).
int rdma_ns(const RdmaNsOptions& o);

/// Runs argv (execvp) where the configured devices' nodes and sysfs files exist: as it is when
/// they all do, else in the private mount namespace described above. `who` starts every error
/// line. unprivileged_ok: when not root, say so in one line and run the program without them
/// (`uroce run`; verbs programs do not read them). Returns only on failure: the exit status.
int exec_with_rdma_files(const std::vector<std::string>& argv, const char* who,
                         bool unprivileged_ok);

}  // namespace uroce::tool
