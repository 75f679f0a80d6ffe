// Internal helpers over libnl-3 (nl_util.h).
#include "netlink/nl_util.h"

#include <net/if.h>
#include <netlink/handlers.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace uroce::netlink::detail {

SockPtr connect_route(std::string* err) {
  SockPtr sock(nl_socket_alloc());
  if (!sock) {
    if (err) *err = "netlink: out of memory allocating a socket";
    return nullptr;
  }
  if (int rc = nl_connect(sock.get(), NETLINK_ROUTE); rc < 0) {
    if (err) *err = std::string("netlink: cannot open a route socket: ") + nl_geterror(rc);
    return nullptr;
  }
  nl_socket_disable_auto_ack(sock.get());
  return sock;
}

std::optional<Gid> to_gid(const nl_addr* a) {
  if (!a) return std::nullopt;
  const auto* bytes = static_cast<const uint8_t*>(nl_addr_get_binary_addr(a));
  const unsigned len = nl_addr_get_len(a);
  Gid g;
  if (nl_addr_get_family(a) == AF_INET && len == 4) {
    g = Gid::from_ipv4(0);
    std::memcpy(&g.raw[12], bytes, 4);
    return g;
  }
  if (nl_addr_get_family(a) == AF_INET6 && len == 16) {
    std::memcpy(g.raw.data(), bytes, 16);
    return g;
  }
  return std::nullopt;
}

int family_of(const Gid& g) { return g.is_ipv4_mapped() ? AF_INET : AF_INET6; }

AddrPtr to_nl_addr(const Gid& g) {
  if (g.is_ipv4_mapped()) return AddrPtr(nl_addr_build(AF_INET, &g.raw[12], 4));
  return AddrPtr(nl_addr_build(AF_INET6, g.raw.data(), 16));
}

namespace {

struct Reply {
  nl_object* obj = nullptr;
  int error = 0;
};

void keep_object(nl_object* obj, void* arg) {
  auto* r = static_cast<Reply*>(arg);
  if (r->obj) return;  // one object expected; a second one is ignored
  nl_object_get(obj);
  r->obj = obj;
}

int on_valid(nl_msg* msg, void* arg) {
  auto* r = static_cast<Reply*>(arg);
  if (nl_msg_parse(msg, keep_object, r) < 0 && !r->obj) r->error = EIO;
  return NL_STOP;
}

int on_error(sockaddr_nl*, nlmsgerr* e, void* arg) {
  auto* r = static_cast<Reply*>(arg);
  r->error = e->error < 0 ? -e->error : EIO;
  return NL_STOP;
}

}  // namespace

nl_object* request_one(nl_sock* sock, nl_msg* msg, int* error) {
  *error = 0;
  if (int rc = nl_send_auto(sock, msg); rc < 0) {
    *error = EIO;
    return nullptr;
  }
  Reply reply;
  // nl_socket_get_cb() takes a reference of its own.
  std::unique_ptr<nl_cb, void (*)(nl_cb*)> sock_cb(nl_socket_get_cb(sock), nl_cb_put);
  std::unique_ptr<nl_cb, void (*)(nl_cb*)> cb(sock_cb ? nl_cb_clone(sock_cb.get()) : nullptr,
                                              nl_cb_put);
  if (!cb) {
    *error = ENOMEM;
    return nullptr;
  }
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_valid, &reply);
  nl_cb_err(cb.get(), NL_CB_CUSTOM, on_error, &reply);
  const int rc = nl_recvmsgs(sock, cb.get());
  if (!reply.obj && reply.error == 0) reply.error = rc < 0 ? EIO : ENOENT;
  if (reply.obj && reply.error) {
    nl_object_put(reply.obj);
    reply.obj = nullptr;
  }
  *error = reply.error;
  return reply.obj;
}

std::string ifname_of(int ifindex) {
  char name[IF_NAMESIZE] = {};
  if (ifindex > 0 && if_indextoname(static_cast<unsigned>(ifindex), name)) return name;
  return "ifindex " + std::to_string(ifindex);
}

}  // namespace uroce::netlink::detail
