/**
 * @file monitor.h
 * @brief Follows one netdev live: a non-blocking netlink socket subscribed to link, IPv4/IPv6
 * address, IPv4/IPv6 route and neighbour notifications.
 *
 * Usage: open the Monitor, then query() the netdev (so no change falls between the two), wait
 * for fd() to be readable (poll/epoll), call poll(&state). When the socket overran (the kernel
 * dropped notifications, ENOBUFS) poll() reads the whole state again.
 *
 * Thread-safety: none; one thread owns the Monitor (and the Resolver it invalidates).
 */
#pragma once

#include <memory>
#include <string>

#include "netlink/netdev.h"

struct nl_sock;

namespace uroce::netlink {

class Resolver;

class Monitor {
 public:
  /// Subscribes for `ifindex`; on failure ok() is false and error() says why.
  /// @param resolver optional: its route/neighbour caches are dropped on relevant changes.
  explicit Monitor(int ifindex, Resolver* resolver = nullptr);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  bool ok() const { return sock_ != nullptr; }
  const std::string& error() const { return error_; }
  /// Readable when notifications are pending; -1 when !ok().
  int fd() const;
  /// Drains every pending notification into *state (whose ifindex must be this Monitor's)
  /// and returns true when the netdev's link state, MTU, MAC, name or GID list changed.
  bool poll(NetdevState* state);

 private:
  int ifindex_;
  Resolver* resolver_;
  nl_sock* sock_ = nullptr;  ///< owned (nl_socket_free)
  std::string error_;
};

}  // namespace uroce::netlink
