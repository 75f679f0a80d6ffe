/**
 * @file gsi_api.cc
 * @brief The UROCE_PRIVATE_1 interface of uroce_gsi.h: the device's QP1 for lib/rdmacm.
 *
 * The engine queues received MADs and tells the Runtime (EngineObserver::on_gsi_mad, engine
 * lock held), which makes the Runtime's eventfd readable; the reader takes them under the
 * engine lock. A MAD sent is handed to the engine and pushed out by one progress step, so it
 * leaves before the caller's next action (a program that disconnects and exits at once still
 * sends its DREQ).
 */
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "verbs/objects.h"
#include "verbs/symver.h"
#include "verbs/uroce_gsi.h"

struct uroce_gsi {
  uroce::verbs::Runtime* rt = nullptr;
};

namespace uroce::verbs {
namespace {

Gid gid_of(const uint8_t (&b)[16]) {
  Gid g;
  std::memcpy(g.raw.data(), b, 16);
  return g;
}

}  // namespace

void Runtime::on_gsi_mad() {
  if (gsi_fd < 0) return;
  uint64_t one = 1;
  ssize_t r = write(gsi_fd, &one, sizeof one);
  (void)r;  // a full counter (never in practice) still reads as readable
}

}  // namespace uroce::verbs

using uroce::verbs::Runtime;

UROCE_EXPORT uroce_gsi* uroce_gsi_open(ibv_context* c) {
  if (!c) {
    errno = EINVAL;
    return nullptr;
  }
  Runtime* rt = uroce::verbs::ctx_of(c)->rt;
  if (int err = rt->start()) {  // a deferred open (device::Runtime::open) opens the port here
    errno = err;
    return nullptr;
  }
  std::lock_guard<std::mutex> g(rt->mu);
  if (rt->gsi_users == 0) {
    rt->gsi_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (rt->gsi_fd < 0) return nullptr;
    rt->engine->enable_gsi(true);
  }
  auto* h = new (std::nothrow) uroce_gsi;
  if (!h) {
    errno = ENOMEM;
    return nullptr;
  }
  h->rt = rt;
  rt->gsi_users++;
  return h;
}

UROCE_EXPORT void uroce_gsi_close(uroce_gsi* h) {
  if (!h) return;
  Runtime* rt = h->rt;
  {
    std::lock_guard<std::mutex> g(rt->mu);
    if (--rt->gsi_users == 0) {
      rt->engine->enable_gsi(false);
      close(rt->gsi_fd);
      rt->gsi_fd = -1;
    }
  }
  delete h;
}

UROCE_EXPORT int uroce_gsi_fd(uroce_gsi* h) { return h ? h->rt->gsi_fd : -1; }

UROCE_EXPORT int uroce_gsi_recv(uroce_gsi* h, uroce_gsi_mad* out, int max) {
  if (!h || !out || max < 0) {
    errno = EINVAL;
    return -1;
  }
  Runtime* rt = h->rt;
  uroce::transport::GsiMad buf[16];
  int n = 0;
  std::lock_guard<std::mutex> g(rt->mu);
  if (rt->gone()) {
    errno = ENODEV;
    return -1;
  }
  while (n < max) {
    size_t want = std::min<size_t>(std::size(buf), static_cast<size_t>(max - n));
    size_t got = rt->engine->poll_gsi(std::span(buf, want));
    for (size_t i = 0; i < got; ++i) {
      uroce_gsi_mad& o = out[n++];
      std::memcpy(o.peer_gid, buf[i].peer.raw.data(), 16);
      std::memcpy(o.local_gid, buf[i].local.raw.data(), 16);
      o.peer_qpn = buf[i].peer_qpn;
      std::memcpy(o.mad, buf[i].mad.data(), sizeof o.mad);
    }
    if (got < want) break;
  }
  return n;
}

UROCE_EXPORT int uroce_gsi_send(uroce_gsi* h, const uroce_gsi_mad* m) {
  if (!h || !m) {
    errno = EINVAL;
    return -1;
  }
  Runtime* rt = h->rt;
  uroce::transport::GsiMad g;
  g.peer = uroce::verbs::gid_of(m->peer_gid);
  g.local = uroce::verbs::gid_of(m->local_gid);
  g.peer_qpn = m->peer_qpn;
  std::memcpy(g.mad.data(), m->mad, g.mad.size());
  std::lock_guard<std::mutex> l(rt->mu);
  const uroce::Timestamp t = uroce::verbs::now();
  uroce::Status s = rt->engine->post_gsi(g, t);
  if (!s) {
    errno = s.code();
    return -1;
  }
  uroce::verbs::drive_locked(rt, t);
  return 0;
}

UROCE_EXPORT int uroce_shared_slot(ibv_context* c) {
  if (!c) return -1;
  Runtime* rt = uroce::verbs::ctx_of(c)->rt;
  if (rt->start() != 0) return -1;
  std::lock_guard<std::mutex> g(rt->mu);
  uroce::LinkState st;
  return rt->port->link_state(&st) ? st.shared_slot : -1;
}

UROCE_EXPORT int uroce_hostd_port(ibv_context* c, int op, uint16_t ps, uint16_t port,
                                  const uint8_t addr[16]) {
  if (!c || !addr || op < UROCE_HOSTD_RELEASE || op > UROCE_HOSTD_BIND) {
    errno = EINVAL;
    return -1;
  }
  Runtime* rt = uroce::verbs::ctx_of(c)->rt;
  if (int err = rt->start()) {
    errno = err;
    return -1;
  }
  uroce::Gid a;
  std::memcpy(a.raw.data(), addr, 16);
  std::lock_guard<std::mutex> g(rt->mu);
  if (int err = rt->port->cm_port(static_cast<uroce::Port::CmPortOp>(op), ps, port, a)) {
    errno = err;
    return -1;
  }
  return 0;
}

UROCE_EXPORT int uroce_route_gid(ibv_context* c, const uint8_t dst[16], int* gid_index) {
  if (!c || !dst || !gid_index) {
    errno = EINVAL;
    return -1;
  }
  Runtime* rt = uroce::verbs::ctx_of(c)->rt;
  uroce::Gid d;
  std::memcpy(d.raw.data(), dst, 16);
  if (int err = rt->start()) {
    errno = err;
    return -1;
  }
  std::lock_guard<std::mutex> g(rt->mu);
  if (rt->port->link_version() == 0) {
    errno = EOPNOTSUPP;
    return -1;
  }
  uroce::Gid src = d;
  std::string err;
  const bool own = std::find(rt->gids.begin(), rt->gids.end(), d) != rt->gids.end();
  if (!own && !rt->port->route_source(d, &src, &err)) {
    errno = ENETUNREACH;
    return -1;
  }
  for (size_t i = 0; i < rt->gids.size(); ++i) {
    if (rt->gids[i] == src) {
      *gid_index = static_cast<int>(i);
      return 0;
    }
  }
  errno = EADDRNOTAVAIL;
  return -1;
}
