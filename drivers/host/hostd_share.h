/**
 * @file hostd_share.h
 * @brief What uroce-hostd (tools/uroce-hostd) and its client processes agree on: where the
 * daemon of a netdev listens, how many clients it serves, how a client claims a slot, and how
 * a frame's destination QPN names a slot (docs/host-mode.md, "Several processes on one netdev").
 *
 * Paths are per netdev and network namespace (the inode of /proc/self/ns/net), in
 * $UROCE_RUN_DIR or /run/uroce, like drivers/xdp's netdev lock:
 *   hostd-<ifname>.<netns>.sock     the daemon's memif server socket
 *   hostd-<ifname>.<netns>.lock     held (flock, exclusive) by the running daemon
 *   hostd-<ifname>.<netns>.slot-<k> held (flock, exclusive) by the client in slot k
 * Slot k is the client's memif interface id and the QPN tag of its QPs.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace uroce::host {

/// Clients one daemon serves (memif ids 0..kHostdSlots-1); at most 2^kSharedQpnTagBits.
inline constexpr int kHostdSlots = 8;

/// The RoCE MTU both ends of a client's memif are set up for (same buffer size on each side).
inline constexpr uint32_t kHostdMemifMtu = 4096;

/// xdp::netdev_run_path("hostd", ifname): <$UROCE_RUN_DIR or /run/uroce>/hostd-<ifname>.
/// <netns inode> (append ".sock", ".lock", ".slot-<k>").
std::string hostd_base(std::string_view ifname);

/// A daemon serves ifname in this namespace: its lock is held and its socket exists (the
/// daemon creates the socket last, when it is ready).
bool hostd_running(std::string_view ifname);

/// A claimed client slot: the slot number and the lock file that holds it (closed when the
/// client's port closes, or at exit).
struct SlotClaim {
  int slot = -1;
  int fd = -1;
};
/// Claims the lowest free client slot of ifname's daemon; nullopt with *err when all are taken.
std::optional<SlotClaim> claim_slot(std::string_view ifname, std::string* err);

/// The destination QPN of a RoCEv2 frame (as wire::rocev2_udp_payload() recognises one, with a
/// whole BTH after the UDP header); nullopt for anything else.
std::optional<uint32_t> roce_dest_qpn(std::span<const uint8_t> frame);

/// The client slot a QPN carries (its top kSharedQpnTagBits bits).
int slot_of_qpn(uint32_t qpn);
/// The slot of the client a frame with this destination QPN is for; nullopt when the tag
/// names no slot a daemon serves (>= kHostdSlots: a peer's mistake or a forged frame).
std::optional<int> client_of_qpn(uint32_t qpn);

}  // namespace uroce::host
