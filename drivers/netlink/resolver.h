/**
 * @file resolver.h
 * @brief Next hop and neighbour MAC for a destination GID, answered by the kernel: its FIB
 * (policy rules, gateways, source address selection) and its neighbour table.
 *
 * route(): one RTM_GETROUTE for the destination (IPv4-mapped GIDs as IPv4, others as IPv6;
 * link-local IPv6 destinations are looked up on the bound netdev, RTA_OIF).
 * neighbour(): the kernel's neighbour entry; when there is none (or it failed before we
 * asked) the kernel is made to resolve it by sending one small UDP datagram to the next hop's
 * discard port (9) from a socket bound to the netdev, as rdma-core's libibverbs does: the
 * kernel queues it, sends ARP / neighbour solicitation itself, and later calls (or a Monitor
 * event) find the answer. We never send ARP/ND ourselves: the kernel owns this link.
 *
 * Both keep a small cache; a Monitor given this Resolver drops them on route/neighbour/link
 * changes. Without one, call invalidate_*() yourself.
 *
 * Thread-safety: none; one thread owns the Resolver. Units: none.
 */
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "common/types.h"

struct nl_sock;

namespace uroce::netlink {

struct NextHop {
  int ifindex = 0;     ///< output netdev
  Gid gateway_or_dst;  ///< the gateway, or the destination itself when it is on-link
  Gid src;             ///< the kernel's preferred source address (zero if none)
  friend bool operator==(const NextHop&, const NextHop&) = default;
};

enum class Resolve {
  kFound,    ///< *mac is set
  kPending,  ///< the kernel is resolving it; ask again later (e.g. on a Monitor event)
  kFailed,   ///< the kernel gave up (NUD_FAILED); the next call starts a new attempt
};

class Resolver {
 public:
  static constexpr size_t kMaxEntries = 1024;  ///< per cache; a full cache is emptied

  /// @param ifindex the bound netdev: routes out of any other one are reported as errors.
  explicit Resolver(int ifindex);
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  /// The kernel's next hop to `dst`; nullopt and one line in *err when there is no route,
  /// the destination is local, or the route leaves through another netdev.
  std::optional<NextHop> route(const Gid& dst, std::string* err);

  /// The MAC of `nexthop` on `ifindex` (normally NextHop::ifindex / gateway_or_dst).
  Resolve neighbour(int ifindex, const Gid& nexthop, MacAddr* mac);

  void invalidate_routes() { routes_.clear(); }
  void invalidate_neighbours();

 private:
  struct Neigh {
    MacAddr mac;
    bool valid = false;      ///< mac is the kernel's current answer
    bool triggered = false;  ///< we made the kernel resolve it in this attempt
  };
  using NeighKey = std::pair<int, std::array<uint8_t, 16>>;

  nl_sock* socket(std::string* err);
  bool trigger(int ifindex, const Gid& nexthop);

  int ifindex_;
  nl_sock* sock_ = nullptr;  ///< owned, opened on first use
  std::map<std::array<uint8_t, 16>, NextHop> routes_;
  std::map<NeighKey, Neigh> neigh_;
};

}  // namespace uroce::netlink
