/**
 * @file rs_opts.cc
 * @brief rsocket options and names: rsetsockopt, rgetsockopt, rfcntl, rgetpeername,
 * rgetsockname (rsocket(7) lists what is supported).
 *
 * SOL_SOCKET: SO_REUSEADDR, SO_RCVBUF/SO_SNDBUF (the ring sizes: twice the value, as
 * Linux reports for TCP; effective until the socket connects), SO_LINGER, SO_KEEPALIVE
 * (kept and reported; no keepalive messages are sent, RC retries detect a dead peer),
 * SO_OOBINLINE, SO_ERROR (read and cleared). IPPROTO_TCP: TCP_NODELAY (rsockets never
 * delay), TCP_MAXSEG (the path MTU), TCP_KEEPIDLE/KEEPCNT/KEEPINTVL. IPPROTO_IPV6:
 * IPV6_V6ONLY. SOL_RDMA (before connecting, EINVAL after): RDMA_SQSIZE, RDMA_RQSIZE,
 * RDMA_INLINE, RDMA_IOMAPSIZE, RDMA_ROUTE (path records, struct ibv_path_data, as librdmacm:
 * rconnect resolves its route with them through RDMA_OPTION_IB_PATH; read back, the records
 * set and not yet used, else the connection's path). Anything else: ENOTSUP.
 */
#include <endian.h>
#include <fcntl.h>
#include <infiniband/sa.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "rdmacm/export.h"
#include "rdmacm/rsocket.h"

using namespace uroce::rdmacm::rs;
using uroce::rdmacm::fail;

namespace {

int int_of(const void* v, socklen_t len) {
  int x = 0;
  std::memcpy(&x, v, std::min<size_t>(len, sizeof x));
  return x;
}

void put_int(void* v, socklen_t* len, int x) {
  std::memcpy(v, &x, std::min<size_t>(*len, sizeof x));
  *len = sizeof x;
}

void copy_addr(sockaddr* dst, socklen_t* len, const sockaddr* src) {
  const socklen_t size = src->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  std::memcpy(dst, src, std::min(*len, size));
  *len = size;
}

/// A path record of the route as RDMA_ROUTE gives it (librdmacm's rs_convert_sa_path).
ibv_path_data path_data_of(const ibv_sa_path_rec& p) {
  ibv_path_data d{};
  d.path.dgid = p.dgid;
  d.path.sgid = p.sgid;
  d.path.dlid = p.dlid;
  d.path.slid = p.slid;
  d.path.flowlabel_hoplimit = htobe32(be32toh(p.flow_label) << 8 | p.hop_limit);
  d.path.tclass = p.traffic_class;
  d.path.reversible_numpath = static_cast<uint8_t>(p.reversible << 7 | 1);
  d.path.pkey = p.pkey;
  d.path.qosclass_sl = htobe16(p.sl);
  d.path.mtu = static_cast<uint8_t>(p.mtu | 2 << 6);  // "exactly"
  d.path.rate = static_cast<uint8_t>(p.rate | 2 << 6);
  d.path.packetlifetime = static_cast<uint8_t>(p.packet_life_time | 2 << 6);
  d.flags = static_cast<uint32_t>(p.preference);
  return d;
}

/// RDMA_ROUTE read back: the records set and not yet used, else one per path of the
/// connection's route (none before it is resolved). EINVAL: *len holds less than that.
int get_route(const Socket& s, void* val, socklen_t* len) {
  if (!s.route.empty()) {
    if (*len < s.route.size()) return fail(EINVAL);
    std::memcpy(val, s.route.data(), s.route.size());
    *len = static_cast<socklen_t>(s.route.size());
    return 0;
  }
  if (*len < sizeof(ibv_path_data)) return fail(EINVAL);
  socklen_t n = 0;
  const int paths = s.cm ? s.cm->route.num_paths : 0;
  for (int i = 0; i < paths && n + sizeof(ibv_path_data) <= *len; ++i) {
    const ibv_path_data d = path_data_of(s.cm->route.path_rec[i]);
    std::memcpy(static_cast<uint8_t*>(val) + n, &d, sizeof d);
    n += sizeof d;
  }
  *len = n;
  return 0;
}

}  // namespace

UROCE_CM_EXPORT int rsetsockopt(int fd, int level, int name, const void* val, socklen_t len) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  if (!val || (level != SOL_SOCKET || name != SO_LINGER ? len < sizeof(int) : len < sizeof(linger)))
    return fail(EINVAL);
  std::lock_guard<std::mutex> g(s->mu);
  int ret = ENOTSUP;
  uint64_t* opts = nullptr;
  bool on = false;
  const int v = name == SO_LINGER && level == SOL_SOCKET ? 0 : int_of(val, len);
  switch (level) {
    case SOL_SOCKET:
      opts = &s->so_opts;
      switch (name) {
        case SO_REUSEADDR:
          ret = rdma_set_option(s->cm, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
                                const_cast<void*>(val), sizeof(int))
                    ? errno
                    : 0;
          on = v;
          break;
        case SO_RCVBUF:
          if (!s->rbuf) s->rbuf_size = static_cast<uint32_t>(v) << 1;
          ret = 0;
          break;
        case SO_SNDBUF:
          if (!s->sbuf) s->sbuf_size = static_cast<uint32_t>(v) << 1;
          if (s->sbuf_size < kSndLowat) s->sbuf_size = kSndLowat << 1;
          ret = 0;
          break;
        case SO_LINGER:  // kept inverted, so that the default (0) reads as on
          on = !static_cast<const linger*>(val)->l_onoff;
          ret = 0;
          break;
        case SO_KEEPALIVE:
        case SO_OOBINLINE:
          on = v;
          ret = 0;
          break;
      }
      break;
    case IPPROTO_TCP:
      opts = &s->tcp_opts;
      switch (name) {
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL:
        case TCP_MAXSEG: ret = 0; break;
        case TCP_KEEPIDLE:
          if (v <= 0) {
            ret = EINVAL;
            break;
          }
          s->keepalive_time = static_cast<uint32_t>(v);
          ret = 0;
          break;
        case TCP_NODELAY:
          on = v;
          ret = 0;
          break;
      }
      break;
    case IPPROTO_IPV6:
      opts = &s->ipv6_opts;
      if (name == IPV6_V6ONLY) {
        ret = rdma_set_option(s->cm, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, const_cast<void*>(val),
                              sizeof(int))
                  ? errno
                  : 0;
        on = v;
      }
      break;
    case SOL_RDMA:
      if (s->state >= kOpening) {
        ret = EINVAL;
        break;
      }
      switch (name) {
        case RDMA_SQSIZE:
          s->sq_size = static_cast<uint16_t>(std::min<uint32_t>(v, kQpMaxSize));
          ret = 0;
          break;
        case RDMA_RQSIZE:
          s->rq_size = static_cast<uint16_t>(std::min<uint32_t>(v, kQpMaxSize));
          ret = 0;
          break;
        case RDMA_INLINE:
          s->sq_inline = static_cast<uint16_t>(std::min<uint32_t>(v, kQpMaxSize));
          ret = 0;
          break;
        case RDMA_IOMAPSIZE:
          s->target_iomap_size = iomap_size_round(static_cast<uint32_t>(std::max(v, 0)));
          ret = 0;
          break;
        case RDMA_ROUTE: {
          const auto* p = static_cast<const uint8_t*>(val);
          s->route.assign(p, p + len);
          ret = 0;
          break;
        }
      }
      break;
  }
  if (ret) return fail(ret);
  if (opts && name < 64) {
    if (on)
      *opts |= uint64_t{1} << name;
    else
      *opts &= ~(uint64_t{1} << name);
  }
  return 0;
}

UROCE_CM_EXPORT int rgetsockopt(int fd, int level, int name, void* val, socklen_t* len) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  if (!val || !len) return fail(EINVAL);
  std::lock_guard<std::mutex> g(s->mu);
  auto bit = [](uint64_t opts, int n) { return n < 64 && (opts >> n) & 1 ? 1 : 0; };
  switch (level) {
    case SOL_SOCKET:
      switch (name) {
        case SO_REUSEADDR:
        case SO_KEEPALIVE:
        case SO_OOBINLINE: put_int(val, len, bit(s->so_opts, name)); return 0;
        case SO_RCVBUF: put_int(val, len, static_cast<int>(s->rbuf_size)); return 0;
        case SO_SNDBUF: put_int(val, len, static_cast<int>(s->sbuf_size)); return 0;
        case SO_LINGER: {
          linger l{!bit(s->so_opts, SO_LINGER), 0};
          std::memcpy(val, &l, std::min<size_t>(*len, sizeof l));
          *len = sizeof l;
          return 0;
        }
        case SO_ERROR:
          put_int(val, len, s->err);
          s->err = 0;
          return 0;
      }
      break;
    case IPPROTO_TCP:
      switch (name) {
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL: put_int(val, len, 1); return 0;
        case TCP_KEEPIDLE: put_int(val, len, static_cast<int>(s->keepalive_time)); return 0;
        case TCP_NODELAY: put_int(val, len, bit(s->tcp_opts, name)); return 0;
        case TCP_MAXSEG:
          put_int(val, len,
                  s->cm && s->cm->route.num_paths ? 1 << (7 + s->cm->route.path_rec->mtu) : 2048);
          return 0;
      }
      break;
    case IPPROTO_IPV6:
      if (name == IPV6_V6ONLY) {
        put_int(val, len, bit(s->ipv6_opts, name));
        return 0;
      }
      break;
    case SOL_RDMA:
      switch (name) {
        case RDMA_SQSIZE: put_int(val, len, s->sq_size); return 0;
        case RDMA_RQSIZE: put_int(val, len, s->rq_size); return 0;
        case RDMA_INLINE: put_int(val, len, s->sq_inline); return 0;
        case RDMA_IOMAPSIZE: put_int(val, len, s->target_iomap_size); return 0;
        case RDMA_ROUTE: return get_route(*s, val, len);
      }
      break;
  }
  return fail(ENOTSUP);
}

UROCE_CM_EXPORT int rfcntl(int fd, int cmd, ...) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  std::lock_guard<std::mutex> g(s->mu);
  if (cmd == F_GETFL) return s->fd_flags;
  if (cmd != F_SETFL) return fail(ENOTSUP);
  va_list ap;
  va_start(ap, cmd);
  const int flags = va_arg(ap, int);
  va_end(ap);
  if ((s->fd_flags & O_NONBLOCK) != (flags & O_NONBLOCK) && set_nonblocking(*s, flags & O_NONBLOCK))
    return -1;
  s->fd_flags = flags;
  return 0;
}

UROCE_CM_EXPORT int rgetpeername(int fd, sockaddr* addr, socklen_t* len) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  if (!addr || !len) return fail(EINVAL);
  copy_addr(addr, len, rdma_get_peer_addr(s->cm));
  return 0;
}

UROCE_CM_EXPORT int rgetsockname(int fd, sockaddr* addr, socklen_t* len) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  if (!addr || !len) return fail(EINVAL);
  copy_addr(addr, len, rdma_get_local_addr(s->cm));
  return 0;
}
