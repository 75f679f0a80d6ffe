/**
 * @file netdev.h
 * @brief What the kernel says about one netdev: index, name, MAC, MTU, up, rx queues, and
 * its addresses as RoCEv2 GIDs in the order an rxe device on it would list them.
 *
 * GID order (as Linux's roce_gid_mgmt fills an rxe GID table): IPv6 link-local addresses
 * first, then IPv4 addresses as IPv4-mapped GIDs (::ffff:a.b.c.d), then the other IPv6
 * addresses; within a group the kernel's order (its address dump). IPv6 addresses still in
 * duplicate address detection (tentative) or that failed it are not GIDs.
 *
 * Thread-safety: query() opens its own netlink socket and may run on any thread.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/types.h"

namespace uroce::netlink {

struct NetdevState {
  int ifindex = 0;
  std::string name;
  MacAddr mac;
  uint32_t mtu = 0;        ///< bytes, L3 (the netdev's MTU)
  bool up = false;         ///< IFF_UP and IFF_RUNNING (administratively up, oper state up)
  std::vector<Gid> gids;   ///< RoCEv2 GIDs in rxe order (see the file comment)
  unsigned rx_queues = 0;  ///< receive queues (IFLA_NUM_RX_QUEUES)
  friend bool operator==(const NetdevState&, const NetdevState&) = default;
};

/// The netdev called `ifname` in this process's network namespace; nullopt and one line in
/// *err ("no such netdev 'eth9'", ...) otherwise.
std::optional<NetdevState> query(const std::string& ifname, std::string* err);
/// The same by index.
std::optional<NetdevState> query(int ifindex, std::string* err);

/// Rank of a GID in the rxe order: 0 IPv6 link-local, 1 IPv4-mapped, 2 other IPv6.
int gid_group(const Gid& g);
/// Appends `g` at the end of its group in `gids` (kept in rxe order); false if already there.
bool insert_gid(std::vector<Gid>* gids, const Gid& g);
/// Removes `g` from `gids`; false if it was not there.
bool erase_gid(std::vector<Gid>* gids, const Gid& g);

}  // namespace uroce::netlink
