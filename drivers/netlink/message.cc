// Kernel notifications into NetdevState through libnl's parsers (message.h).
#include "netlink/message.h"

#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/object.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "netlink/nl_util.h"
#include "netlink/state_util.h"

namespace uroce::netlink {

namespace {

struct Apply {
  NetdevState* state;
  int msgtype;
  unsigned changes = kNoChange;
};

void apply_link(Apply* a, rtnl_link* link) {
  // AF_BRIDGE (and other) link messages describe a port's role, not the netdev itself.
  if (rtnl_link_get_family(link) != AF_UNSPEC) return;
  a->changes |= kNeighChanged;  // neighbours are flushed when a link goes down or changes
  if (a->msgtype == RTM_DELLINK) {
    if (a->state->up) a->changes |= kLinkChanged;
    a->state->up = false;
    return;
  }
  NetdevState next = *a->state;
  detail::fill_link(&next, link);
  next.ifindex = a->state->ifindex;
  if (next.name.empty()) next.name = a->state->name;  // partial messages keep what they lack
  if (next.mtu == 0) next.mtu = a->state->mtu;
  if (next.rx_queues == 0) next.rx_queues = a->state->rx_queues;
  if (!(next == *a->state)) a->changes |= kLinkChanged;
  *a->state = std::move(next);
}

void apply_addr(Apply* a, rtnl_addr* addr) {
  a->changes |= kRoutesChanged;
  if (rtnl_addr_get_ifindex(addr) != a->state->ifindex) return;
  auto gid = detail::address_gid(addr);
  bool changed = false;
  if (gid && a->msgtype == RTM_NEWADDR) {
    changed = insert_gid(&a->state->gids, *gid);
  } else if (auto any = detail::to_gid(rtnl_addr_get_local(addr))) {
    // Deleted, or (IPv6) now tentative or DAD failed: no longer a GID.
    changed = erase_gid(&a->state->gids, *any);
  }
  if (changed) a->changes |= kGidsChanged;
}

void on_object(nl_object* obj, void* arg) {
  auto* a = static_cast<Apply*>(arg);
  const std::string_view type = nl_object_get_type(obj);
  if (type == "route/link") {
    auto* link = reinterpret_cast<rtnl_link*>(obj);
    if (rtnl_link_get_ifindex(link) == a->state->ifindex) apply_link(a, link);
  } else if (type == "route/addr") {
    apply_addr(a, reinterpret_cast<rtnl_addr*>(obj));
  }
}

/// What a message other than a link or address one changes, without libnl's object parsers:
/// routes and neighbours are only a signal to look again, every other type (requests such as
/// RTM_GETROUTE, rules, qdiscs...) changes nothing here, and libnl's parsers trust attribute
/// lengths the kernel always gets right (a short RTA_VIA makes its route parser's
/// nl_addr_build copy (size_t)-1 bytes, also in an RTM_GETROUTE; a zero-length RTA_MULTIPATH
/// next hop loops until memory runs out). nullopt: a link or address message, for libnl. The
/// framing of a route or neighbour message is still checked: one whose header or attributes
/// do not fit is ignored.
std::optional<unsigned> signal_only(const nlmsghdr* hdr) {
  int family_header = 0;
  int max_type = 0;
  unsigned change = kNoChange;
  switch (hdr->nlmsg_type) {
    case RTM_NEWROUTE:
    case RTM_DELROUTE:
      family_header = sizeof(rtmsg);
      max_type = RTA_MAX;
      change = kRoutesChanged;
      break;
    case RTM_NEWNEIGH:
    case RTM_DELNEIGH:
      family_header = sizeof(ndmsg);
      max_type = NDA_MAX;
      change = kNeighChanged;
      break;
    case RTM_NEWLINK:
    case RTM_DELLINK:
    case RTM_NEWADDR:
    case RTM_DELADDR: return std::nullopt;
    default: return kNoChange;
  }
  std::array<nlattr*, std::max(RTA_MAX, NDA_MAX) + 1> tb{};
  if (nlmsg_parse(const_cast<nlmsghdr*>(hdr), family_header, tb.data(), max_type, nullptr) < 0) {
    return kNoChange;
  }
  return change;
}

}  // namespace

unsigned apply_message(NetdevState* state, nl_msg* msg) {
  if (auto change = signal_only(nlmsg_hdr(msg))) return *change;
  Apply a{state, nlmsg_hdr(msg)->nlmsg_type};
  nl_msg_parse(msg, on_object, &a);
  return a.changes;
}

unsigned apply_message(NetdevState* state, std::span<const uint8_t> bytes) {
  // An aligned copy: the netlink accessors assume 4-byte aligned headers.
  std::vector<uint32_t> buf((bytes.size() + 3) / 4);
  if (!bytes.empty()) std::memcpy(buf.data(), bytes.data(), bytes.size());
  auto* hdr = reinterpret_cast<nlmsghdr*>(buf.data());
  int remaining = static_cast<int>(bytes.size());
  unsigned changes = kNoChange;
  for (; nlmsg_ok(hdr, remaining); hdr = nlmsg_next(hdr, &remaining)) {
    // nlmsg_convert copies nlmsg_len bytes, which nlmsg_ok checked against the buffer.
    detail::MsgPtr msg(nlmsg_convert(hdr));
    if (!msg) continue;
    nlmsg_set_proto(msg.get(), NETLINK_ROUTE);
    changes |= apply_message(state, msg.get());
  }
  return changes;
}

}  // namespace uroce::netlink
