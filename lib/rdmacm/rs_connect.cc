/**
 * @file rs_connect.cc
 * @brief Opening and closing rsockets: rsocket, rbind, rlisten, raccept, rconnect, rshutdown,
 * rclose (rsocket(7); the socket calls of the same names for their semantics).
 *
 * An rsocket rides on a synchronous rdma_cm_id; its connection data (rs_wire.h) travels as
 * the private data of the CM REQ and REP. A non-blocking socket (O_NONBLOCK through rfcntl)
 * has a non-blocking event channel, so each step of rconnect (address, route, connect) and
 * of raccept's wait for the RTU may stop with EAGAIN; do_connect resumes where it stopped
 * (rconnect answers EINPROGRESS, rsend/rrecv EAGAIN, rpoll reports POLLOUT once connected).
 */
#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "rdmacm/cma.h"
#include "rdmacm/export.h"
#include "rdmacm/rsocket.h"

namespace uroce::rdmacm::rs {

namespace {

bool would_block() { return errno == EAGAIN || errno == EWOULDBLOCK; }

/// Waits for (or, non-blocking, looks for) the event of the id's last call.
int complete_id(Socket& s) { return complete(id_of(s.cm)); }

/// The peer's connection data in the id's current event.
bool take_peer_conn_data(Socket& s) {
  const rdma_cm_event* ev = s.cm->event;
  if (!ev || !ev->param.conn.private_data) return false;
  auto d = parse_conn_data(
      {static_cast<const uint8_t*>(ev->param.conn.private_data), ev->param.conn.private_data_len});
  if (!d) return false;
  save_conn_data(s, *d);
  return true;
}

/// The route from RDMA_ROUTE's records when the program gave some (used once), else resolved.
int resolve_route(Socket& s) {
  if (s.route.empty()) return rdma_resolve_route(s.cm, 2000);
  std::vector<uint8_t> r = std::move(s.route);
  s.route.clear();
  return rdma_set_option(s.cm, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, r.data(), r.size());
}

int start_connect(Socket& s) {
  if (create_ep(s)) return -1;
  uint8_t pd[sizeof(WireConnData)];
  build_conn_data(conn_data(s), pd);
  rdma_conn_param p{};
  p.private_data = pd;
  p.private_data_len = sizeof pd;
  p.flow_control = 1;
  p.retry_count = 7;
  p.rnr_retry_count = 7;
  return rdma_connect(s.cm, &p);
}

}  // namespace

int do_connect(Socket& s) {
  // Each phase's call either completes (its event taken: the next phase starts at once) or,
  // non-blocking, stops with EAGAIN (its event is taken by complete_id on the next call).
  int ret = 0;
  bool taken = false;  ///< the event of the phase just started is already taken
  auto start = [&](int r, uint32_t next) {  // false: stop (ret -1, errno says why)
    ret = r;
    if (r && !would_block()) return false;
    s.state = next;
    taken = !r;
    return !r;
  };
  auto finish = [&] {  // the event of the current phase; false: stop here
    if (taken) {
      taken = false;
      return true;
    }
    ret = complete_id(s);
    return !ret;
  };
  for (bool more = true; more;) {
    switch (s.state) {
      case kInit:
      case kBound:
        more = start(rdma_resolve_addr(s.cm, nullptr, reinterpret_cast<sockaddr*>(&s.dst), 2000),
                     kResolvingAddr);
        break;
      case kResolvingAddr: more = finish() && start(resolve_route(s), kResolvingRoute); break;
      case kResolvingRoute: more = finish() && start(start_connect(s), kConnecting); break;
      case kConnecting:
        more = false;
        if (!finish()) break;
        if (!take_peer_conn_data(s)) {
          errno = ENOTSUP;  // not an rsocket peer (no version 1 connection data)
          ret = -1;
          break;
        }
        s.state = kConnectRdwr;
        break;
      case kAccepting:
        more = false;
        if (!(s.fd_flags & O_NONBLOCK)) fcntl(s.cm->channel->fd, F_SETFL, 0);
        if (!finish()) break;
        s.state = kConnectRdwr;
        break;
      default:
        more = false;
        errno = EINVAL;
        ret = -1;
        break;
    }
  }
  if (ret) {
    if (would_block()) {
      errno = EINPROGRESS;
    } else {
      s.state = kConnectError;
      s.err = errno;
    }
  }
  return ret;
}

int set_nonblocking(Socket& s, int flags) {
  int ret = 0;
  if (s.cq_channel) ret = fcntl(s.cq_channel->fd, F_SETFL, flags);
  if (!ret && s.state < kConnected) ret = fcntl(s.cm->channel->fd, F_SETFL, flags);
  return ret;
}

}  // namespace uroce::rdmacm::rs

using namespace uroce::rdmacm::rs;
using uroce::rdmacm::fail;

UROCE_CM_EXPORT int rsocket(int domain, int type, int protocol) {
  if ((domain != AF_INET && domain != AF_INET6 && domain != AF_IB) ||
      (type != SOCK_STREAM && type != SOCK_DGRAM) ||
      (type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
      (type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
    return fail(ENOTSUP);
  if (domain == AF_IB) return fail(EAFNOSUPPORT);  // uroce's addresses are IP addresses
  // Datagram rsockets are another protocol (UD QPs found through a UDP socket): not here.
  if (type == SOCK_DGRAM) return fail(EOPNOTSUPP);
  SocketPtr s = alloc(nullptr);
  s->domain = domain;
  if (rdma_create_id(nullptr, &s->cm, s.get(), RDMA_PS_TCP)) return -1;
  s->fd = s->cm->channel->fd;
  insert(s);
  return s->fd;
}

UROCE_CM_EXPORT int rbind(int fd, const sockaddr* addr, socklen_t /*len*/) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  std::lock_guard<std::mutex> g(s->mu);
  int ret = rdma_bind_addr(s->cm, const_cast<sockaddr*>(addr));
  if (!ret) s->state = kBound;
  return ret;
}

UROCE_CM_EXPORT int rlisten(int fd, int backlog) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  std::lock_guard<std::mutex> g(s->mu);
  if (s->state == kListening) return 0;
  int ret = rdma_listen(s->cm, backlog);
  if (!ret) s->state = kListening;
  return ret;
}

UROCE_CM_EXPORT int rgetpeername(int fd, sockaddr* addr, socklen_t* len);

UROCE_CM_EXPORT int raccept(int fd, sockaddr* addr, socklen_t* addrlen) {
  SocketPtr l = lookup(fd);
  if (!l) return fail(EBADF);
  SocketPtr n;
  {
    std::lock_guard<std::mutex> g(l->mu);
    if (l->state != kListening) return fail(EINVAL);
    n = alloc(l.get());
  }
  // Waits (or, non-blocking, looks) for a CONNECT_REQUEST on the listener's channel.
  if (rdma_get_request(l->cm, &n->cm)) return -1;
  n->fd = n->cm->channel->fd;
  std::unique_lock<std::mutex> g(n->mu);
  auto fail_free = [&](int e) {
    free_socket(*n);  // destroying the id rejects the request
    return fail(e);
  };
  const rdma_cm_event* ev = n->cm->event;
  auto creq = parse_conn_data(
      {static_cast<const uint8_t*>(ev->param.conn.private_data), ev->param.conn.private_data_len});
  if (!creq) return fail_free(ENOTSUP);
  // Non-blocking listener: rdma_accept must not wait for the RTU (a thread connecting to
  // itself would wait forever); the socket finishes accepting in do_connect.
  if (l->fd_flags & O_NONBLOCK) fcntl(n->fd, F_SETFL, O_NONBLOCK);
  if (create_ep(*n)) return fail_free(errno);
  save_conn_data(*n, *creq);
  rdma_conn_param p = ev->param.conn;
  uint8_t pd[sizeof(WireConnData)];
  build_conn_data(conn_data(*n), pd);
  p.private_data = pd;
  p.private_data_len = sizeof pd;
  if (!rdma_accept(n->cm, &p))
    n->state = kConnectRdwr;
  else if (would_block())
    n->state = kAccepting;
  else
    return fail_free(errno);
  insert(n);
  g.unlock();
  if (addr && addrlen) rgetpeername(n->fd, addr, addrlen);
  return n->fd;
}

UROCE_CM_EXPORT int rconnect(int fd, const sockaddr* addr, socklen_t len) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  std::lock_guard<std::mutex> g(s->mu);
  if (s->state & (kConnected | kDisconnected | kError)) return fail(EISCONN);
  if (s->state & kOpening) return fail(EALREADY);
  if (!addr || len > sizeof s->dst) return fail(EINVAL);
  std::memcpy(&s->dst, addr, len);
  return do_connect(*s);
}

UROCE_CM_EXPORT int rshutdown(int fd, int how) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  std::unique_lock<std::mutex> lk(s->mu);
  int ret = 0;
  if (s->fd_flags & O_NONBLOCK) set_nonblocking(*s, 0);
  if (s->state & kConnected) {
    uint32_t ctrl = static_cast<uint32_t>(Ctrl::kDisconnect);
    bool send = true;
    if (how == SHUT_RDWR) {
      s->state &= ~(kReadable | kWritable);
    } else if (how == SHUT_WR) {
      s->state &= ~kWritable;
      if (s->state & kReadable) ctrl = static_cast<uint32_t>(Ctrl::kShutdown);
    } else {
      s->state &= ~kReadable;
      send = !(s->state & kWritable);  // still sending: the peer hears of nothing yet
    }
    if (send) {
      if (!ctrl_avail(*s)) ret = process_cq(*s, lk, false, conn_can_send_ctrl);
      if (!ret && (s->state & kConnected) && ctrl_avail(*s)) {
        s->ctrl_seqno++;
        ret = post_msg(*s, msg(Op::kCtrl, ctrl));
      }
      // Graceful: what was sent (and the message) completes before we return.
      if (s->state & kConnected) process_cq(*s, lk, false, conn_all_sends_done);
    }
  }
  if ((s->fd_flags & O_NONBLOCK) && (s->state & kConnected)) set_nonblocking(*s, s->fd_flags);
  if ((s->state & kDisconnected) && s->cm->qp) {
    // Fully closed: the QP goes to ERR (flushing what waits), as librdmacm does for RoCE.
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(s->cm->qp, &a, IBV_QP_STATE);
  }
  return ret;
}

UROCE_CM_EXPORT int rclose(int fd) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  bool connected;
  {
    std::lock_guard<std::mutex> g(s->mu);
    connected = s->state & kConnected;
  }
  if (connected) rshutdown(fd, SHUT_RDWR);
  remove(fd);
  std::lock_guard<std::mutex> g1(s->send_mu), g2(s->recv_mu), g3(s->mu);
  free_socket(*s);
  return 0;
}
