// Resolver::neighbour(): the kernel's neighbour table, and making the kernel resolve
// (resolver.h).
#include <fcntl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netlink/msg.h>
#include <netlink/route/neighbour.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "netlink/nl_util.h"
#include "netlink/resolver.h"

namespace uroce::netlink {

using detail::ObjPtr;

namespace {

// States in which the kernel's link-layer address is usable (the kernel's NUD_VALID).
constexpr int kUsable =
    NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE | NUD_DELAY;

// The kernel's neighbour entry for (ifindex, addr), or null (errno in *error).
ObjPtr<rtnl_neigh> get_neigh(nl_sock* sock, int ifindex, const Gid& addr, int* error) {
  detail::MsgPtr msg(nlmsg_alloc_simple(RTM_GETNEIGH, 0));
  detail::AddrPtr dst = detail::to_nl_addr(addr);
  ndmsg ndm{};
  ndm.ndm_family = static_cast<uint8_t>(detail::family_of(addr));
  ndm.ndm_ifindex = ifindex;
  if (!msg || !dst || nlmsg_append(msg.get(), &ndm, sizeof(ndm), NLMSG_ALIGNTO) < 0 ||
      nla_put_addr(msg.get(), NDA_DST, dst.get()) < 0) {
    *error = ENOMEM;
    return nullptr;
  }
  nl_object* obj = detail::request_one(sock, msg.get(), error);
  if (obj && std::strcmp(nl_object_get_type(obj), "route/neigh") != 0) {
    nl_object_put(obj);
    *error = EIO;
    return nullptr;
  }
  return ObjPtr<rtnl_neigh>(reinterpret_cast<rtnl_neigh*>(obj));
}

}  // namespace

void Resolver::invalidate_neighbours() {
  for (auto& [key, n] : neigh_) n.valid = false;
}

bool Resolver::trigger(int ifindex, const Gid& nexthop) {
  // One datagram to the discard port from a socket bound to the netdev: the kernel routes it
  // to `nexthop` on that netdev, finds no neighbour, queues it and solicits.
  const int family = detail::family_of(nexthop);
  const int fd = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const std::string name = detail::ifname_of(ifindex);
  setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name.c_str(),
             static_cast<socklen_t>(name.size() + 1));
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == AF_INET) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(9);
    std::memcpy(&sin.sin_addr, &nexthop.raw[12], 4);
    std::memcpy(&ss, &sin, sizeof(sin));
    len = sizeof(sin);
  } else {
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(9);
    std::memcpy(&sin6.sin6_addr, nexthop.raw.data(), 16);
    sin6.sin6_scope_id = static_cast<uint32_t>(ifindex);  // needed for link-local next hops
    std::memcpy(&ss, &sin6, sizeof(sin6));
    len = sizeof(sin6);
  }
  const char byte = 0;
  const bool sent = sendto(fd, &byte, 1, 0, reinterpret_cast<sockaddr*>(&ss), len) >= 0;
  ::close(fd);
  return sent;
}

Resolve Resolver::neighbour(int ifindex, const Gid& nexthop, MacAddr* mac) {
  const NeighKey key{ifindex, nexthop.raw};
  auto it = neigh_.find(key);
  if (it == neigh_.end()) {
    if (neigh_.size() >= kMaxEntries) neigh_.clear();
    it = neigh_.emplace(key, Neigh{}).first;
  }
  Neigh& n = it->second;
  if (n.valid) {
    *mac = n.mac;
    return Resolve::kFound;
  }
  int error = 0;
  nl_sock* sock = socket(nullptr);
  ObjPtr<rtnl_neigh> entry = sock ? get_neigh(sock, ifindex, nexthop, &error) : nullptr;
  const int state = entry ? rtnl_neigh_get_state(entry.get()) : 0;
  if (entry && (state & kUsable)) {
    nl_addr* lladdr = rtnl_neigh_get_lladdr(entry.get());
    if (lladdr && nl_addr_get_len(lladdr) == 6) {
      std::memcpy(n.mac.b.data(), nl_addr_get_binary_addr(lladdr), 6);
      n.valid = true;
      n.triggered = false;
      *mac = n.mac;
      return Resolve::kFound;
    }
  }
  if (entry && (state & NUD_INCOMPLETE)) return Resolve::kPending;  // the kernel is on it
  if (entry && (state & NUD_FAILED) && n.triggered) {
    n.triggered = false;  // reported once; the next call tries again
    return Resolve::kFailed;
  }
  // No entry, or one that failed before this attempt: make the kernel resolve it.
  if (!trigger(ifindex, nexthop)) {
    n.triggered = false;
    return Resolve::kFailed;
  }
  n.triggered = true;
  return Resolve::kPending;
}

}  // namespace uroce::netlink
