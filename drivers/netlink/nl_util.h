/**
 * @file nl_util.h
 * @brief Internal helpers over libnl-3: owning pointers for its objects, nl_addr <-> Gid, and
 * one request / one reply on a route socket.
 *
 * Thread-safety: none; each caller owns its socket.
 */
#pragma once

#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/object.h>
#include <netlink/socket.h>

#include <memory>
#include <optional>
#include <string>

#include "common/types.h"

namespace uroce::netlink::detail {

struct SockFree {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
struct AddrPut {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
struct MsgFree {
  void operator()(nl_msg* m) const { nlmsg_free(m); }
};
struct CachePut {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
/// Any libnl object type (rtnl_link, rtnl_addr, rtnl_route, rtnl_neigh): drops one reference.
template <class T>
struct ObjPut {
  void operator()(T* o) const { nl_object_put(reinterpret_cast<nl_object*>(o)); }
};
using SockPtr = std::unique_ptr<nl_sock, SockFree>;
using AddrPtr = std::unique_ptr<nl_addr, AddrPut>;
using MsgPtr = std::unique_ptr<nl_msg, MsgFree>;
using CachePtr = std::unique_ptr<nl_cache, CachePut>;
template <class T>
using ObjPtr = std::unique_ptr<T, ObjPut<T>>;

/// A blocking NETLINK_ROUTE socket without automatic ACK requests; null and *err on failure.
SockPtr connect_route(std::string* err);

/// An IPv4 (as IPv4-mapped) or IPv6 nl_addr as a GID; nullopt for other families/lengths.
std::optional<Gid> to_gid(const nl_addr* a);
/// The GID as an nl_addr: AF_INET for IPv4-mapped GIDs, AF_INET6 otherwise.
AddrPtr to_nl_addr(const Gid& g);
/// AF_INET for IPv4-mapped GIDs, AF_INET6 otherwise.
int family_of(const Gid& g);

/// Sends `msg` (a GET for one object) and parses the single reply with libnl's parser for its
/// type. Returns the object (one reference, caller puts it) or null with the kernel's errno
/// (or EIO when the reply could not be parsed) in *error.
nl_object* request_one(nl_sock* sock, nl_msg* msg, int* error);

/// "eth0" for an ifindex, or "ifindex 7" when it has no name in this namespace.
std::string ifname_of(int ifindex);

}  // namespace uroce::netlink::detail
