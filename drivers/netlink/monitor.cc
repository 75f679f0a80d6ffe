// Live notifications for one netdev (monitor.h).
#include "netlink/monitor.h"

#include <linux/rtnetlink.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/socket.h>

#include "netlink/message.h"
#include "netlink/nl_util.h"
#include "netlink/resolver.h"
#include "netlink/state_util.h"

namespace uroce::netlink {

namespace {

struct Drain {
  NetdevState* state;
  unsigned changes = kNoChange;
};

int on_notification(nl_msg* msg, void* arg) {
  auto* d = static_cast<Drain*>(arg);
  d->changes |= apply_message(d->state, msg);
  return NL_OK;
}

}  // namespace

Monitor::Monitor(int ifindex, Resolver* resolver) : ifindex_(ifindex), resolver_(resolver) {
  detail::SockPtr sock = detail::connect_route(&error_);
  if (!sock) return;
  // Notifications carry no sequence number of ours.
  nl_socket_disable_seq_check(sock.get());
  int rc =
      nl_socket_add_memberships(sock.get(), RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR,
                                RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, RTNLGRP_NEIGH, 0);
  if (rc >= 0) rc = nl_socket_set_nonblocking(sock.get());
  if (rc < 0) {
    error_ = std::string("netlink: cannot subscribe to notifications: ") + nl_geterror(rc);
    return;
  }
  // A large receive buffer makes overruns (and the full re-read they cost) rare.
  nl_socket_set_buffer_size(sock.get(), 1 << 20, 0);
  sock_ = sock.release();
}

Monitor::~Monitor() {
  if (sock_) nl_socket_free(sock_);
}

int Monitor::fd() const { return sock_ ? nl_socket_get_fd(sock_) : -1; }

bool Monitor::poll(NetdevState* state) {
  if (!sock_) return false;
  const NetdevState before = *state;
  Drain drain{state};
  nl_socket_modify_cb(sock_, NL_CB_VALID, NL_CB_CUSTOM, on_notification, &drain);
  bool overrun = false;
  for (int errors = 0; errors < 8;) {
    const int rc = nl_recvmsgs_default(sock_);
    if (rc >= 0) continue;
    if (rc == -NLE_AGAIN) break;
    // ENOBUFS (libnl: NLE_NOMEM): notifications were lost; anything else: read again below.
    overrun = true;
    ++errors;
  }
  nl_socket_modify_cb(sock_, NL_CB_VALID, NL_CB_DEFAULT, nullptr, nullptr);

  if (overrun) {
    drain.changes |= kLinkChanged | kGidsChanged | kRoutesChanged | kNeighChanged;
    std::string err;
    if (auto now = query(ifindex_, &err)) {
      *state = std::move(*now);
    } else {
      state->up = false;  // gone
    }
  } else if (drain.changes & kGidsChanged) {
    // The incremental update has the right set; the kernel's dump has the right order.
    std::string err;
    if (detail::SockPtr req = detail::connect_route(&err)) {
      std::vector<Gid> gids;
      if (detail::read_gids(req.get(), ifindex_, &gids, &err)) state->gids = std::move(gids);
    }
  }
  if (resolver_) {
    if (drain.changes & (kRoutesChanged | kLinkChanged | kGidsChanged))
      resolver_->invalidate_routes();
    if (drain.changes & (kNeighChanged | kLinkChanged)) resolver_->invalidate_neighbours();
  }
  return !(before == *state);
}

}  // namespace uroce::netlink
