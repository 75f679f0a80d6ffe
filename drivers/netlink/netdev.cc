// query(): one netdev's link attributes and addresses from the kernel (netdev.h).
#include "netlink/netdev.h"

#include <linux/if_addr.h>
#include <net/if.h>
#include <netlink/cache.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include <algorithm>
#include <cstring>

#include "netlink/nl_util.h"
#include "netlink/state_util.h"

namespace uroce::netlink {

using detail::ObjPtr;

int gid_group(const Gid& g) {
  if (g.is_ipv4_mapped()) return 1;
  if (g.is_link_local()) return 0;
  return 2;
}

bool insert_gid(std::vector<Gid>* gids, const Gid& g) {
  if (std::find(gids->begin(), gids->end(), g) != gids->end()) return false;
  const int group = gid_group(g);
  auto at = std::find_if(gids->begin(), gids->end(),
                         [group](const Gid& x) { return gid_group(x) > group; });
  gids->insert(at, g);
  return true;
}

bool erase_gid(std::vector<Gid>* gids, const Gid& g) {
  auto it = std::find(gids->begin(), gids->end(), g);
  if (it == gids->end()) return false;
  gids->erase(it);
  return true;
}

namespace {

std::optional<NetdevState> query_link(int ifindex, const char* name, std::string* err) {
  detail::SockPtr sock = detail::connect_route(err);
  if (!sock) return std::nullopt;
  rtnl_link* raw = nullptr;
  const int rc = rtnl_link_get_kernel(sock.get(), ifindex, name, &raw);
  ObjPtr<rtnl_link> link(raw);
  if (rc < 0 || !link) {
    const std::string what = name ? "'" + std::string(name) + "'" : std::to_string(ifindex);
    if (err) {
      *err = rc == -NLE_OBJ_NOTFOUND || rc == -NLE_NODEV
                 ? "no such netdev " + what
                 : "netlink: cannot read netdev " + what + ": " + nl_geterror(rc);
    }
    return std::nullopt;
  }
  NetdevState st;
  detail::fill_link(&st, link.get());
  if (!detail::read_gids(sock.get(), st.ifindex, &st.gids, err)) return std::nullopt;
  return st;
}

}  // namespace

std::optional<NetdevState> query(const std::string& ifname, std::string* err) {
  if (ifname.empty() || ifname.size() >= IF_NAMESIZE) {
    if (err) *err = "not a netdev name: '" + ifname + "'";
    return std::nullopt;
  }
  return query_link(0, ifname.c_str(), err);
}

std::optional<NetdevState> query(int ifindex, std::string* err) {
  if (ifindex <= 0) {
    if (err) *err = "not a netdev index: " + std::to_string(ifindex);
    return std::nullopt;
  }
  return query_link(ifindex, nullptr, err);
}

}  // namespace uroce::netlink
