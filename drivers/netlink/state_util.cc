// libnl link/address objects into NetdevState (state_util.h).
#include "netlink/state_util.h"

#include <linux/if_addr.h>
#include <net/if.h>
#include <netlink/cache.h>
#include <sys/socket.h>

#include <cstring>

#include "netlink/nl_util.h"

namespace uroce::netlink::detail {

void fill_link(NetdevState* st, rtnl_link* link) {
  st->ifindex = rtnl_link_get_ifindex(link);
  const char* name = rtnl_link_get_name(link);
  st->name = name ? name : "";
  st->mac = MacAddr{};
  if (nl_addr* lladdr = rtnl_link_get_addr(link); lladdr && nl_addr_get_len(lladdr) == 6)
    std::memcpy(st->mac.b.data(), nl_addr_get_binary_addr(lladdr), 6);
  st->mtu = rtnl_link_get_mtu(link);
  const unsigned flags = rtnl_link_get_flags(link);
  st->up = (flags & IFF_UP) && (flags & IFF_RUNNING);
  st->rx_queues = rtnl_link_get_num_rx_queues(link);
}

std::optional<Gid> address_gid(rtnl_addr* addr) {
  const int family = rtnl_addr_get_family(addr);
  if (family != AF_INET && family != AF_INET6) return std::nullopt;
  if (family == AF_INET6 && (rtnl_addr_get_flags(addr) & (IFA_F_TENTATIVE | IFA_F_DADFAILED)))
    return std::nullopt;
  return to_gid(rtnl_addr_get_local(addr));
}

bool read_gids(nl_sock* sock, int ifindex, std::vector<Gid>* gids, std::string* err) {
  nl_cache* raw = nullptr;
  if (int rc = rtnl_addr_alloc_cache(sock, &raw); rc < 0) {
    if (err) *err = std::string("netlink: cannot dump addresses: ") + nl_geterror(rc);
    return false;
  }
  CachePtr cache(raw);
  gids->clear();
  // The cache keeps the dump's order: IPv4 then IPv6, each in the kernel's per-device order.
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    auto* addr = reinterpret_cast<rtnl_addr*>(o);
    if (rtnl_addr_get_ifindex(addr) != ifindex) continue;
    if (auto g = address_gid(addr)) insert_gid(gids, *g);
  }
  return true;
}

}  // namespace uroce::netlink::detail
