// Resolver::route(): the kernel's FIB answer for one destination (resolver.h).
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/route/route.h>
#include <netlink/socket.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "netlink/netdev.h"
#include "netlink/nl_util.h"
#include "netlink/resolver.h"

namespace uroce::netlink {

using detail::ObjPtr;

Resolver::Resolver(int ifindex) : ifindex_(ifindex) {}

Resolver::~Resolver() {
  if (sock_) nl_socket_free(sock_);
}

nl_sock* Resolver::socket(std::string* err) {
  if (!sock_) sock_ = detail::connect_route(err).release();
  return sock_;
}

std::optional<NextHop> Resolver::route(const Gid& dst, std::string* err) {
  if (auto it = routes_.find(dst.raw); it != routes_.end()) return it->second;
  nl_sock* sock = socket(err);
  if (!sock) return std::nullopt;

  const int family = detail::family_of(dst);
  detail::MsgPtr msg(nlmsg_alloc_simple(RTM_GETROUTE, 0));
  detail::AddrPtr addr = detail::to_nl_addr(dst);
  rtmsg rtm{};
  rtm.rtm_family = static_cast<uint8_t>(family);
  rtm.rtm_dst_len = family == AF_INET ? 32 : 128;
  if (!msg || !addr || nlmsg_append(msg.get(), &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 ||
      nla_put_addr(msg.get(), RTA_DST, addr.get()) < 0 ||
      // A link-local destination means nothing without its link: ours.
      (gid_group(dst) == 0 &&
       nla_put_u32(msg.get(), RTA_OIF, static_cast<uint32_t>(ifindex_)) < 0)) {
    if (err) *err = "netlink: out of memory building a route request";
    return std::nullopt;
  }
  int error = 0;
  nl_object* obj = detail::request_one(sock, msg.get(), &error);
  if (obj && std::strcmp(nl_object_get_type(obj), "route/route") != 0) {
    nl_object_put(obj);
    obj = nullptr;
    error = EIO;
  }
  if (!obj) {
    if (err) *err = "no route to " + dst.to_string() + ": " + std::strerror(error);
    return std::nullopt;
  }
  ObjPtr<rtnl_route> rt(reinterpret_cast<rtnl_route*>(obj));

  const uint8_t type = rtnl_route_get_type(rt.get());
  if (type == RTN_LOCAL) {
    if (err) *err = dst.to_string() + " is an address of this host";
    return std::nullopt;
  }
  if (type != RTN_UNICAST || rtnl_route_get_nnexthops(rt.get()) < 1) {
    if (err) *err = "no unicast route to " + dst.to_string();
    return std::nullopt;
  }
  rtnl_nexthop* nh = rtnl_route_nexthop_n(rt.get(), 0);
  NextHop hop;
  hop.ifindex = rtnl_route_nh_get_ifindex(nh);
  hop.gateway_or_dst = detail::to_gid(rtnl_route_nh_get_gateway(nh)).value_or(dst);
  hop.src = detail::to_gid(rtnl_route_get_pref_src(rt.get())).value_or(Gid{});
  if (hop.ifindex != ifindex_) {
    if (err) {
      *err = "route to " + dst.to_string() + " leaves through " + detail::ifname_of(hop.ifindex) +
             ", not the bound netdev " + detail::ifname_of(ifindex_);
    }
    return std::nullopt;
  }
  if (routes_.size() >= kMaxEntries) routes_.clear();
  routes_[dst.raw] = hop;
  return hop;
}

}  // namespace uroce::netlink
