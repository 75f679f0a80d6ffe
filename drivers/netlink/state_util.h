/**
 * @file state_util.h
 * @brief Internal: libnl's link and address objects into NetdevState fields, and the GID
 * list of one netdev read from the kernel's address dump.
 */
#pragma once

#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include <optional>
#include <string>
#include <vector>

#include "common/types.h"
#include "netlink/netdev.h"

namespace uroce::netlink::detail {

/// ifindex, name, MAC, MTU, up and rx queues from a link object.
void fill_link(NetdevState* st, rtnl_link* link);
/// The address as a GID, or nullopt when it is not one (not IPv4/IPv6, IPv6 tentative or
/// DAD failed).
std::optional<Gid> address_gid(rtnl_addr* addr);
/// The GIDs of `ifindex` in rxe order, from one address dump; false and *err on failure.
bool read_gids(nl_sock* sock, int ifindex, std::vector<Gid>* gids, std::string* err);

}  // namespace uroce::netlink::detail
