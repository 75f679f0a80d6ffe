/**
 * @file netdev_view.cc
 * @brief NetdevView, usable_netdev() and netdev_speed_bps() (netdev_view.h).
 */
#include "netlink/netdev_view.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace uroce::netlink {

namespace {

constexpr uint64_t kUnknownSpeedBps = 10'000'000'000ull;

/// A small number from procfs (a TTL); 64 when it cannot be read.
uint8_t read_sysctl_u8(const std::string& path) {
  std::ifstream in(path);
  unsigned v = 0;
  return in >> v && v > 0 && v < 256 ? static_cast<uint8_t>(v) : 64;
}

}  // namespace

NetdevView::NetdevView(const NetdevState& st)
    : state_(st),
      resolver_(st.ifindex),
      monitor_(st.ifindex, &resolver_),
      ttl4_(read_sysctl_u8("/proc/sys/net/ipv4/ip_default_ttl")),
      hop6_(read_sysctl_u8("/proc/sys/net/ipv6/conf/" + st.name + "/hop_limit")) {}

bool NetdevView::start(std::string* err) {
  if (!monitor_.ok()) {
    *err = monitor_.error();
    return false;
  }
  monitor_.poll(&state_);
  return true;
}

void NetdevView::after_poll(Timestamp now, size_t frames) {
  if ((frames == 0 || ++busy_polls_ % 16 == 0) && now >= next_poll_) {
    next_poll_ = now + kPoll;
    if (monitor_.poll(&state_)) ++version_;
  }
}

void NetdevView::link_state(LinkState* out) const {
  out->ifindex = state_.ifindex;
  out->up = state_.up;
  out->mtu = state_.mtu;
  out->gids = state_.gids;
}

bool NetdevView::resolve(const Gid& ip, MacAddr* out) {
  if (std::find(state_.gids.begin(), state_.gids.end(), ip) != state_.gids.end()) {
    *out = state_.mac;
    return true;
  }
  Gid next = ip;
  int ifindex = state_.ifindex;
  if (!ip.is_link_local()) {
    std::string err;
    auto hop = resolver_.route(ip, &err);
    if (!hop) return false;
    next = hop->gateway_or_dst;
    ifindex = hop->ifindex;
  }
  switch (resolver_.neighbour(ifindex, next, out)) {
    case Resolve::kFound: last_mac_[next.raw] = *out; return true;
    case Resolve::kPending:
      // The kernel lost the entry (a carrier loss flushes the table) and resolves it again:
      // the last MAC it gave keeps traffic going meanwhile, as a NIC keeps its cached L2
      // address; a changed answer replaces it.
      if (auto it = last_mac_.find(next.raw); it != last_mac_.end()) {
        *out = it->second;
        return true;
      }
      return false;
    case Resolve::kFailed: last_mac_.erase(next.raw); return false;
  }
  return false;
}

bool NetdevView::route_source(const Gid& dst, Gid* src, std::string* err) {
  if (dst.is_link_local()) {
    for (const Gid& g : state_.gids)
      if (g.is_link_local()) {
        *src = g;
        return true;
      }
    *err = "no IPv6 link-local address on " + state_.name;
    return false;
  }
  auto hop = resolver_.route(dst, err);
  if (!hop) return false;
  if (!hop->src.is_zero()) {
    *src = hop->src;
    return true;
  }
  for (const Gid& g : state_.gids)  // no preferred source: the first of the same family
    if (g.is_ipv4_mapped() == dst.is_ipv4_mapped() && !g.is_link_local()) {
      *src = g;
      return true;
    }
  *err = "no address of the destination's family on " + state_.name;
  return false;
}

uint8_t NetdevView::hop_limit(const Gid& ip) const {
  if (ip.is_link_local()) return 0;
  return ip.is_ipv4_mapped() ? ttl4_ : hop6_;
}

std::optional<NetdevState> usable_netdev(const std::string& ifname, uint32_t mtu,
                                         std::string* err) {
  std::string e;
  auto st = query(ifname, &e);
  if (!st) {
    *err = e + "; ip link show lists the netdevs";
    return std::nullopt;
  }
  if (!st->up) {
    *err = "the netdev is down (ip link set " + ifname + " up; or no carrier)";
    return std::nullopt;
  }
  if (st->gids.empty()) {
    *err = "the netdev has no IP address, so the device would have no GID (ip addr add " +
           std::string("ADDRESS/PREFIX dev ") + ifname + ")";
    return std::nullopt;
  }
  if (std::min(mtu, roce_path_mtu(st->mtu)) == 0) {
    *err = "netdev MTU " + std::to_string(st->mtu) + " carries no RoCE path MTU (>= 352)";
    return std::nullopt;
  }
  return st;
}

bool ethtool_get(const std::string& ifname, void* cmd) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = static_cast<char*>(cmd);
  const bool ok = ioctl(fd, SIOCETHTOOL, &ifr) == 0;
  close(fd);
  return ok;
}

uint64_t netdev_speed_bps(const std::string& ifname) {
  ethtool_cmd cmd{};
  cmd.cmd = ETHTOOL_GSET;
  const uint32_t mbps = ethtool_get(ifname, &cmd) ? ethtool_cmd_speed(&cmd) : 0;
  if (mbps == 0 || mbps == static_cast<uint32_t>(SPEED_UNKNOWN)) return kUnknownSpeedBps;
  return uint64_t{mbps} * 1'000'000ull;
}

}  // namespace uroce::netlink
