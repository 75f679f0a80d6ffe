/**
 * @file message.h
 * @brief One rtnetlink notification (link, address, route, neighbour) applied to a
 * NetdevState: the only place kernel messages become state, so it is what fuzz/netlink_msg.cc
 * feeds. Link and address messages are decoded by libnl (nl_msg_parse with the route cache
 * parsers); route and neighbour messages only have their framing checked.
 *
 * Link messages for state->ifindex update name, MAC, MTU, up and rx queues; a deleted link is
 * down. Address messages for it add or remove the GID (at the end of its rxe group: Monitor
 * re-reads the kernel's order when GIDs changed). Route and neighbour messages change no
 * state but are reported, so that route and neighbour caches can be dropped.
 *
 * Thread-safety: none beyond the caller's ownership of *state.
 */
#pragma once

#include <cstdint>
#include <span>

#include "netlink/netdev.h"

struct nl_msg;

namespace uroce::netlink {

/// What messages changed (bit set).
enum Change : unsigned {
  kNoChange = 0,
  kLinkChanged = 1u << 0,    ///< name, MAC, MTU, up or rx queues of the netdev
  kGidsChanged = 1u << 1,    ///< an address of the netdev appeared or went
  kRoutesChanged = 1u << 2,  ///< any route, or any address (local routes follow them)
  kNeighChanged = 1u << 3,   ///< any neighbour entry, or the netdev's link
};

/// Applies every netlink message in `bytes` (one or more, as read from a socket); messages
/// that are malformed, of another kind or about another netdev are skipped. Returns the
/// Change bits.
unsigned apply_message(NetdevState* state, std::span<const uint8_t> bytes);

/// The same for one message libnl already holds (Monitor's receive path).
unsigned apply_message(NetdevState* state, nl_msg* msg);

}  // namespace uroce::netlink
