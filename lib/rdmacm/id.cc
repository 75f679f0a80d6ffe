/**
 * @file id.cc
 * @brief rdma_cm_id calls: create/destroy, bind, address and route resolution, listen,
 * connect, accept, reject, establish, disconnect, rdma_init_qp_attr, options, migration
 * (the rdma_*(3) man pages of librdmacm; rdma-core's semantics where they say nothing).
 *
 * Address and route resolution are local (addr.h; no ARP here: the engine resolves the
 * peer's MAC when the first MAD leaves), so their events are queued at once. An id created
 * without a channel is synchronous: each call waits for its event (cma.h complete()).
 */
#include <infiniband/sa.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "rdmacm/cma.h"
#include "rdmacm/export.h"
#include "rdmacm/qp_attr.h"
#include "transport/wire/cm_ip.h"

namespace uroce::rdmacm {

int modify_qp_rtr_rts(Id* id);  // channel.cc
int modify_qp_err(Id* id);

namespace {

namespace w = wire::cm;

bool is_ud(const Id* id) { return id->id.qp_type == IBV_QPT_UD || id->id.ps == RDMA_PS_UDP; }
uint16_t ps_of(const Id* id) { return static_cast<uint16_t>(id->id.ps); }

/// Binds the id to device `dev` (verbs, default PD, port 1). Requires mu.
void attach(Id* id, Device* dev) {
  id->dev = dev;
  id->id.verbs = dev->verbs;
  id->id.port_num = 1;
  if (!id->id.pd) id->id.pd = dev->pd;
}

void set_addrs(Id* id) {
  to_sockaddr(id->sgid, id->sport, &id->id.route.addr.src_storage);
  to_sockaddr(id->dgid, id->dport, &id->id.route.addr.dst_storage);
  std::memcpy(id->id.route.addr.addr.ibaddr.sgid.raw, id->sgid.raw.data(), 16);
  std::memcpy(id->id.route.addr.addr.ibaddr.dgid.raw, id->dgid.raw.data(), 16);
  id->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
}

/// The REQ/SIDR_REQ private data: the IP CM header, then rdma_create_ep's and the
/// program's private data. EINVAL when they do not fit.
int req_private(Id* id, const rdma_conn_param* p, std::span<uint8_t> out) {
  w::IpCmHeader h;
  h.ip_version = id->sgid.is_ipv4_mapped() ? 4 : 6;
  h.src_port = id->sport;
  h.src = id->sgid;
  h.dst = id->dgid;
  if (!w::build_ip_cm_header(h, out)) return EINVAL;
  size_t off = w::kIpCmHeaderLen;
  const size_t user = id->connect_data.size() + (p && p->private_data ? p->private_data_len : 0);
  if (off + user > out.size()) return EINVAL;
  if (!id->connect_data.empty())  // (memcpy from an empty vector's null data() is undefined)
    std::memcpy(out.data() + off, id->connect_data.data(), id->connect_data.size());
  off += id->connect_data.size();
  if (p && p->private_data && p->private_data_len)
    std::memcpy(out.data() + off, p->private_data, p->private_data_len);
  return 0;
}

void note_listen(uint16_t port, bool on);

/// Ephemeral ports a bind tries when other processes of the host hold them (uroce-hostd).
constexpr int kHostPortTries = 64;

/// (ps, addr, port) in the host's port space of device d (a device shared through
/// uroce-hostd; others: 0): claimed by a bind or listen, or one claim given back (op:
/// UROCE_HOSTD_*). 0 or an errno.
int host_port(Device* d, int op, uint16_t ps, const Gid& addr, uint16_t port) {
  if (!d->shared) return 0;
  // Either family's wildcard is the daemon's "any address".
  const Gid a = is_any(addr) ? Gid{} : addr;
  return uroce_hostd_port(d->verbs, op, ps, port, a.raw.data()) ? errno : 0;
}

/// The listen of id on device d in the host's port space: claimed (on) or given back.
int host_listen(Device* d, Id* id, bool on) {
  return host_port(d, on ? UROCE_HOSTD_LISTEN : UROCE_HOSTD_RELEASE, ps_of(id), id->sgid,
                   id->sport);
}

/// Stops listening on every device. Requires mu.
void unlisten(Service& s, Id* id) {
  const uint64_t sid = w::ip_service_id(ps_of(id), id->sport);
  for (Device* d : id->listening) {
    host_listen(d, id, false);
    if (--d->listens[sid] == 0) {
      d->listens.erase(sid);
      d->mgr->unlisten(sid);
    }
  }
  id->listening.clear();
  s.remove_listener(id);
  note_listen(id->sport, false);
}

/// UROCE_RDMACM_LISTEN_FILE=<path>: each listen appends "listen <port>" to the file and its
/// end "unlisten <port>", so a test harness can start its client once the server listens
/// (there is no socket to poll).
void note_listen(uint16_t port, bool on) {
  const char* path = getenv("UROCE_RDMACM_LISTEN_FILE");
  if (!path || !*path) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s %u\n", on ? "listen" : "unlisten", port);
    std::fclose(f);
  }
}

/// Whether the last line about `port` in listen file `path` is "listen <port>".
bool noted_listening(const char* path, uint16_t port) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return false;
  const std::string on = "listen " + std::to_string(port) + "\n";
  const std::string off = "un" + on;
  bool listening = false;
  char line[64];
  while (std::fgets(line, sizeof line, f)) {
    if (on == line) listening = true;
    if (off == line) listening = false;
  }
  std::fclose(f);
  return listening;
}

/// UROCE_RDMACM_CONNECT_WHEN_LISTENING=<listen file>: rdma_connect waits (10 s at most) until
/// that file says the peer listens on the port. For programs whose server listens again
/// for a second connection (perftest -R: a control connection, then the data connections on a
/// new listening id): the client's second REQ may reach the server between the two listens
/// and gets a REJ, as it would from the kernel's CM, and perftest 4.5's retry after that
/// crashes. A test harness sets it so that this race of the program cannot fail a run.
void wait_until_noted_listening(uint16_t port) {
  const char* path = getenv("UROCE_RDMACM_CONNECT_WHEN_LISTENING");
  if (!path || !*path) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!noted_listening(path, port) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling, with a deadline
}

}  // namespace
}  // namespace uroce::rdmacm

using namespace uroce::rdmacm;
using uroce::Gid;
namespace w = uroce::wire::cm;

UROCE_CM_EXPORT int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** out, void* context,
                                   rdma_port_space ps) {
  if (!out) return fail(EINVAL);
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB)
    return fail(EINVAL);
  Service::get();  // reads the configuration once
  auto* id = new (std::nothrow) Id;
  if (!id) return fail(ENOMEM);
  id->id.context = context;
  id->id.ps = ps;
  id->id.qp_type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
  if (!channel) {
    id->sync = true;
    channel = rdma_create_event_channel();
    if (!channel) {
      delete id;
      return -1;
    }
    id->own = channel_of(channel);
  }
  id->id.channel = channel;
  *out = &id->id;
  return 0;
}

UROCE_CM_EXPORT int rdma_destroy_id(rdma_cm_id* cid) {
  if (!cid) return fail(EINVAL);
  Id* id = id_of(cid);
  Service& s = Service::get();
  if (id->id.event) {
    rdma_ack_cm_event(id->id.event);
    id->id.event = nullptr;
  }
  {
    std::unique_lock<std::mutex> g(s.mu);
    // The peer hears of it: REJ while connecting, DREQ when connected (ib_destroy_cm_id).
    if (id->conn && id->dev) id->dev->mgr->cancel(id->conn, s.now());
    s.unmap_conn(id);
    if (id->state == IdState::kListen) unlisten(s, id);
    if (id->port_claimed) s.release_port(ps_of(id), id->sgid, id->sport);
    if (id->host_bound)
      host_port(id->host_bound, UROCE_HOSTD_RELEASE, ps_of(id), id->sgid, id->sport);
    // Events not yet taken are skipped; taken ones must be acked first (as rdma-core waits).
    for (Event* e : channel_of(id->id.channel)->q)
      if (e->owner == id) e->dead = true;
    s.acked.wait(g, [&] { return id->unacked <= 0; });
  }
  s.kick();
  if (id->own) rdma_destroy_event_channel(&id->own->ch);
  delete id;
  return 0;
}

UROCE_CM_EXPORT int rdma_bind_addr(rdma_cm_id* cid, sockaddr* addr) {
  if (!cid || !addr) return fail(EINVAL);
  auto gid = gid_of(addr);
  if (!gid) return fail(EAFNOSUPPORT);
  // A loopback address binds as its family's wildcard (the kernel's cma_any_addr): no device,
  // every device's address when the id listens. libfabric's verbs provider binds 127.0.0.1.
  if (is_loopback(*gid)) *gid = gid->is_ipv4_mapped() ? Gid::from_ipv4(0) : Gid{};
  Id* id = id_of(cid);
  Service& s = Service::get();
  std::lock_guard<std::mutex> g(s.mu);
  if (id->state != IdState::kIdle) return fail(EINVAL);
  Device* dev = nullptr;
  if (!is_any(*gid)) {
    auto a = find_local(s.addrs(), *gid);
    if (!a) return fail(EADDRNOTAVAIL);
    dev = s.open_device(a->device);
    if (!dev) return -1;
    id->sgid_index = a->gid_index;
  }
  const uint16_t want = port_of(addr);
  uint16_t port = 0;
  // On a device shared through uroce-hostd the port is the host's too: a port another process
  // holds is EADDRINUSE, an ephemeral one it holds is passed over.
  for (int tries = 0; tries < kHostPortTries && !port; ++tries) {
    port = s.claim_port(ps_of(id), *gid, want, id->reuseaddr);
    if (!port) return fail(EADDRINUSE);
    if (!dev) break;
    const int err = host_port(dev, UROCE_HOSTD_BIND, ps_of(id), *gid, port);
    if (err == 0) {
      if (dev->shared) id->host_bound = dev;
      break;
    }
    s.release_port(ps_of(id), *gid, port);
    if (err != EADDRINUSE || want) return fail(err);
    port = 0;
  }
  if (!port) return fail(EADDRINUSE);
  id->port_claimed = true;
  if (dev) attach(id, dev);
  id->sgid = *gid;
  id->sport = port;
  to_sockaddr(id->sgid, id->sport, &id->id.route.addr.src_storage);
  if (addr->sa_family == AF_INET6 && gid->is_zero()) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&id->id.route.addr.src_storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
  }
  id->state = IdState::kBound;
  return 0;
}

UROCE_CM_EXPORT int rdma_resolve_addr(rdma_cm_id* cid, sockaddr* src, sockaddr* dst,
                                      int /*timeout_ms*/) {
  if (!cid || !dst) return fail(EINVAL);
  auto dgid = gid_of(dst);
  if (!dgid) return fail(EINVAL);
  Id* id = id_of(cid);
  Service& s = Service::get();
  {
    std::lock_guard<std::mutex> g(s.mu);
    if (id->state != IdState::kIdle && id->state != IdState::kBound) return fail(EINVAL);
    std::optional<Gid> sgid;
    if (src) {
      sgid = gid_of(src);
      if (!sgid) return fail(EAFNOSUPPORT);
      if (is_loopback(*sgid)) sgid.reset();  // a wildcard, as in rdma_bind_addr
    } else if (id->state == IdState::kBound) {
      sgid = id->sgid;
    }
    if (is_any(*dgid) || is_loopback(*dgid)) {
      // As the kernel's cma_resolve_loopback: the peer is this host, at the source address,
      // or else at the first address of the first device (its family's first, if it has one).
      if (sgid && !is_any(*sgid)) {
        dgid = sgid;
      } else {
        const std::vector<LocalAddr>& all = s.addrs();
        if (all.empty()) return fail(ENODEV);
        const LocalAddr* pick = &all.front();
        for (const LocalAddr& a : all)
          if (a.device == all.front().device && a.gid.is_ipv4_mapped() == dgid->is_ipv4_mapped()) {
            pick = &a;
            break;
          }
        dgid = pick->gid;
      }
    }
    auto a = s.route_to(sgid, *dgid);
    if (!a) return fail(sgid && !is_any(*sgid) ? EADDRNOTAVAIL : ENETUNREACH);
    Device* dev = s.open_device(a->device);
    if (!dev) return -1;
    if (id->state == IdState::kIdle) {
      uint16_t port = s.claim_port(ps_of(id), a->gid, src ? port_of(src) : 0, id->reuseaddr);
      if (!port) return fail(EADDRINUSE);
      id->sport = port;
      id->port_claimed = true;
    }
    attach(id, dev);
    id->sgid = a->gid;
    id->sgid_index = a->gid_index;
    id->dgid = *dgid;
    id->dport = port_of(dst);
    id->path_mtu = dev->active_mtu;
    set_addrs(id);
    id->state = IdState::kAddrResolved;
    s.deliver(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
  }
  return complete(id);
}

namespace {

/// Makes the id's one path (the GRH fields of RoCEv2, IBA Table 205 path record; no LIDs on
/// Ethernet) and queues ROUTE_RESOLVED. Requires mu.
void resolve_route(Service& s, Id* id) {
  ibv_sa_path_rec& p = id->path;
  p = ibv_sa_path_rec{};
  std::memcpy(p.dgid.raw, id->dgid.raw.data(), 16);
  std::memcpy(p.sgid.raw, id->sgid.raw.data(), 16);
  p.hop_limit = 64;
  p.traffic_class = id->tos;
  p.reversible = 1;
  p.numb_path = 1;
  p.pkey = htobe16(0xffff);
  p.mtu_selector = 2;
  p.mtu = id->path_mtu;
  p.rate_selector = 2;
  p.rate = 3;  // 10 Gb/s
  p.packet_life_time_selector = 2;
  p.packet_life_time = kLocalAckTimeout - 1;
  id->id.route.path_rec = &id->path;
  id->id.route.num_paths = 1;
  id->state = IdState::kRouteResolved;
  s.deliver(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
}

/// RDMA_OPTION_IB_PATH, as the kernel's ucma_set_ib_path and rdma_set_ib_path: the primary
/// bidirectional path record among `n` resolves the route of an id whose address is
/// resolved. On RoCE the addresses stay the id's; the record's MTU (up to the device's) and
/// traffic class are taken. EINVAL: a length that is not whole records, no such record, or
/// another state.
int set_ib_path(Id* id, const void* optval, size_t optlen) {
  if (optlen == 0 || optlen % sizeof(ibv_path_data)) return fail(EINVAL);
  constexpr uint32_t kWanted =
      IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
  const auto* recs = static_cast<const ibv_path_data*>(optval);
  const ibv_path_data* rec = nullptr;
  for (size_t i = 0; i < optlen / sizeof(ibv_path_data) && !rec; ++i)
    if (recs[i].flags == kWanted) rec = &recs[i];
  if (!rec) return fail(EINVAL);
  Service& s = Service::get();
  {
    std::lock_guard<std::mutex> g(s.mu);
    if (!id->dev || id->state != IdState::kAddrResolved) return fail(EINVAL);
    const uint8_t mtu = rec->path.mtu & 0x3f;
    if (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 && mtu < id->dev->active_mtu) id->path_mtu = mtu;
    id->tos = rec->path.tclass;
    resolve_route(s, id);
  }
  // The event is the answer to this call: a synchronous id takes it here, as librdmacm's own
  // rdma_resolve_route does after setting the option.
  return complete(id);
}

}  // namespace

UROCE_CM_EXPORT int rdma_resolve_route(rdma_cm_id* cid, int /*timeout_ms*/) {
  if (!cid) return fail(EINVAL);
  Id* id = id_of(cid);
  Service& s = Service::get();
  {
    std::lock_guard<std::mutex> g(s.mu);
    if (id->state != IdState::kAddrResolved && id->state != IdState::kRouteResolved)
      return fail(EINVAL);
    resolve_route(s, id);
  }
  return complete(id);
}

UROCE_CM_EXPORT int rdma_listen(rdma_cm_id* cid, int /*backlog*/) {
  if (!cid) return fail(EINVAL);
  Id* id = id_of(cid);
  Service& s = Service::get();
  bool idle;
  {
    std::lock_guard<std::mutex> g(s.mu);
    idle = id->state == IdState::kIdle;
  }
  if (idle) {
    // As the kernel's rdma_listen: an unbound id is bound to IPv4's wildcard address and an
    // ephemeral port first.
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    if (rdma_bind_addr(cid, reinterpret_cast<sockaddr*>(&any))) return -1;
  }
  std::lock_guard<std::mutex> g(s.mu);
  if (id->state == IdState::kListen) return 0;
  if (id->state != IdState::kBound) return fail(EINVAL);
  // backlog: the kernel takes <= 0 as its maximum (ucma_listen); uroce has no limit.
  if (id->port_claimed && !s.listen_port(ps_of(id), id->sgid, id->sport)) return fail(EADDRINUSE);
  std::vector<Device*> devs;
  if (id->dev) {
    devs.push_back(id->dev);
  } else {  // a wildcard address listens on every device with an address of its family
    for (const LocalAddr& a : s.addrs()) {
      // IPv6's wildcard takes IPv4 too, unless AFONLY (as the kernel with bindv6only 0).
      const bool v6_any = id->sgid.is_zero();
      if (a.gid.is_ipv4_mapped() != id->sgid.is_ipv4_mapped() && !(v6_any && !id->afonly)) continue;
      Device* d = s.open_device(a.device);
      if (d && std::find(devs.begin(), devs.end(), d) == devs.end()) devs.push_back(d);
    }
    if (devs.empty()) return fail(ENODEV);
    // rdma-core leaves id->verbs NULL for a wildcard bind with several devices; with one,
    // programs (rping) expect it set.
    if (devs.size() == 1) attach(id, devs[0]);
  }
  // The host's port space first: another process listening there makes this fail.
  for (size_t i = 0; i < devs.size(); ++i) {
    if (int err = host_listen(devs[i], id, true)) {
      while (i-- > 0) host_listen(devs[i], id, false);
      return fail(err);
    }
  }
  const uint64_t sid = w::ip_service_id(ps_of(id), id->sport);
  for (Device* d : devs) {
    if (d->listens[sid]++ == 0) d->mgr->listen(sid);
    id->listening.push_back(d);
  }
  id->state = IdState::kListen;
  s.add_listener(id);
  note_listen(id->sport, true);
  return 0;
}

UROCE_CM_EXPORT int rdma_connect(rdma_cm_id* cid, rdma_conn_param* p) {
  if (!cid) return fail(EINVAL);
  Id* id = id_of(cid);
  Service& s = Service::get();
  wait_until_noted_listening(id->dport);
  {
    std::lock_guard<std::mutex> g(s.mu);
    if (id->state != IdState::kRouteResolved || !id->dev) return fail(EINVAL);
    if (id->id.ps == RDMA_PS_TCP && !id->id.qp && !p) return fail(EINVAL);
    const uint64_t sid = w::ip_service_id(ps_of(id), id->dport);
    if (is_ud(id)) {
      std::array<uint8_t, w::kSidrReqPrivateLen> pd{};
      if (int e = req_private(id, p, pd)) return fail(e);
      id->conn = id->dev->mgr->sidr_request(id->dgid, sid, pd, s.now());
    } else {
      const Device& d = *id->dev;
      if (p && ((p->responder_resources != RDMA_MAX_RESP_RES &&
                 p->responder_resources > d.max_responder_resources) ||
                (p->initiator_depth != RDMA_MAX_INIT_DEPTH &&
                 p->initiator_depth > d.max_initiator_depth)))
        return fail(EINVAL);
      id->initiator_depth = p && p->initiator_depth != RDMA_MAX_INIT_DEPTH ? p->initiator_depth
                                                                           : d.max_initiator_depth;
      id->responder_resources = p && p->responder_resources != RDMA_MAX_RESP_RES
                                    ? p->responder_resources
                                    : d.max_responder_resources;
      // As the kernel's CM (cma_connect_ib: min_t(u8, 7, ...)): a larger count is 7, for the
      // REQ and for our own QP's RTS attributes (fio asks for 10).
      id->retry_count = static_cast<uint8_t>(std::min<int>(p ? p->retry_count : 7, 7));
      std::random_device rd;
      id->local_psn = rd() & 0xffffff;
      uroce::cm::ConnectParams cp;
      cp.local = id->sgid;
      cp.remote = id->dgid;
      cp.service_id = sid;
      cp.qpn = id->id.qp ? id->id.qp->qp_num : (p ? p->qp_num : 0);
      cp.srq = id->id.qp ? id->id.qp->srq != nullptr : (p && p->srq);
      cp.flow_control = p && p->flow_control;
      cp.xrc = id->id.qp_type == IBV_QPT_XRC_SEND;
      cp.starting_psn = id->local_psn;
      cp.responder_resources = id->responder_resources;
      cp.initiator_depth = id->initiator_depth;
      cp.path_mtu = id->path_mtu;
      cp.retry_count = id->retry_count;
      cp.rnr_retry_count = static_cast<uint8_t>(std::min<int>(p ? p->rnr_retry_count : 7, 7));
      cp.traffic_class = id->tos;
      cp.local_ack_timeout = kLocalAckTimeout;
      cp.ece_vendor = id->local_ece.vendor_id;
      cp.ece_options = id->local_ece.options;
      if (int e = req_private(id, p, cp.private_data)) return fail(e);
      id->conn = id->dev->mgr->connect(cp, s.now());
    }
    id->connect_data.clear();
    id->state = IdState::kConnect;
    s.map_conn(id);
  }
  s.kick();  // the thread's next deadline is the REQ's resend
  return complete(id);
}

UROCE_CM_EXPORT int rdma_accept(rdma_cm_id* cid, rdma_conn_param* p) {
  if (!cid) return fail(EINVAL);
  Id* id = id_of(cid);
  Service& s = Service::get();
  {
    std::lock_guard<std::mutex> g(s.mu);
    if (id->state != IdState::kReqRcvd || !id->conn) return fail(EINVAL);
    if (is_ud(id)) {
      const uint32_t qpn = id->id.qp ? id->id.qp->qp_num : (p ? p->qp_num : 0);
      std::span<const uint8_t> pd;
      if (p && p->private_data)
        pd = {static_cast<const uint8_t*>(p->private_data), p->private_data_len};
      if (!id->dev->mgr->sidr_reply(id->conn, 0, qpn, RDMA_UDP_QKEY, pd, s.now()))
        return fail(EINVAL);
      s.unmap_conn(id);
      id->conn = 0;
      id->state = IdState::kEstablished;
      if (id->sync && id->id.event) {
        Event* e = event_of(id->id.event);
        id->id.event = nullptr;
        e->owner->unacked--;
        delete e;
      }
      return 0;
    }
    if (id->id.ps == RDMA_PS_TCP && !id->id.qp && !p) return fail(EINVAL);
    const Device& d = *id->dev;
    id->initiator_depth = p && p->initiator_depth != RDMA_MAX_INIT_DEPTH
                              ? p->initiator_depth
                              : std::min(id->initiator_depth, d.max_initiator_depth);
    id->responder_resources = p && p->responder_resources != RDMA_MAX_RESP_RES
                                  ? p->responder_resources
                                  : std::min(id->responder_resources, d.max_responder_resources);
    if (int e = modify_qp_rtr_rts(id)) {
      modify_qp_err(id);
      return fail(e);
    }
    uroce::cm::AcceptParams ap;
    ap.qpn = id->id.qp ? id->id.qp->qp_num : (p ? p->qp_num : 0);
    ap.srq = id->id.qp ? id->id.qp->srq != nullptr : (p && p->srq);
    ap.flow_control = p && p->flow_control;
    ap.starting_psn = id->local_psn;
    ap.responder_resources = id->responder_resources;
    ap.initiator_depth = id->initiator_depth;
    ap.rnr_retry_count = static_cast<uint8_t>(std::min<int>(p ? p->rnr_retry_count : 7, 7));
    ap.ece_vendor = id->remote_ece.vendor_id;  // answered with the requester's vendor
    ap.ece_options = id->local_ece.options;
    if (p && p->private_data && p->private_data_len) {
      if (p->private_data_len > ap.private_data.size()) return fail(EINVAL);
      std::memcpy(ap.private_data.data(), p->private_data, p->private_data_len);
    }
    if (!id->dev->mgr->accept(id->conn, ap, s.now())) {
      modify_qp_err(id);
      return fail(EINVAL);
    }
    id->state = IdState::kAccept;
  }
  s.kick();
  return complete(id);
}

namespace {

/// rdma_reject and rdma_reject_ece: a REJ with `reason` (a SIDR_REP "rejected" for UD).
int reject_with(rdma_cm_id* cid, const void* private_data, uint8_t len, w::RejReason reason) {
  if (!cid) return fail(EINVAL);
  Id* id = id_of(cid);
  Service& s = Service::get();
  std::lock_guard<std::mutex> g(s.mu);
  if (id->state != IdState::kReqRcvd || !id->conn) return fail(EINVAL);
  std::span<const uint8_t> pd;
  if (private_data && len) pd = {static_cast<const uint8_t*>(private_data), len};
  uroce::Status st =
      is_ud(id) ? id->dev->mgr->sidr_reply(id->conn, static_cast<uint8_t>(w::SidrStatus::kRejected),
                                           0, 0, pd, s.now())
                : id->dev->mgr->reject(id->conn, pd, s.now(), reason);
  if (!st) return fail(st.code());
  s.unmap_conn(id);
  id->conn = 0;
  id->state = IdState::kClosed;
  return 0;
}

}  // namespace

UROCE_CM_EXPORT int rdma_reject(rdma_cm_id* cid, const void* private_data, uint8_t len) {
  return reject_with(cid, private_data, len, w::RejReason::kConsumerDefined);
}

UROCE_CM_EXPORT int rdma_reject_ece(rdma_cm_id* cid, const void* private_data, uint8_t len) {
  // As rdma-core: the REJ says "vendor option not supported" (IBA 1.4 reason 35).
  return reject_with(cid, private_data, len, w::RejReason::kVendorOptionNotSupported);
}

UROCE_CM_EXPORT int rdma_establish(rdma_cm_id* cid) {
  if (!cid) return fail(EINVAL);
  Id* id = id_of(cid);
  if (id->id.qp) return fail(EINVAL);  // rdma_establish(3): only for ids without a QP
  Service& s = Service::get();
  std::lock_guard<std::mutex> g(s.mu);
  if (id->state != IdState::kConnResp) return fail(EINVAL);
  if (!id->dev->mgr->ready_to_use(id->conn, s.now())) return fail(EINVAL);
  id->state = IdState::kEstablished;
  return 0;
}

UROCE_CM_EXPORT int rdma_disconnect(rdma_cm_id* cid) {
  if (!cid) return fail(EINVAL);
  Id* id = id_of(cid);
  Service& s = Service::get();
  bool wait = false;
  {
    std::lock_guard<std::mutex> g(s.mu);
    if (!id->id.verbs) return fail(EINVAL);
    modify_qp_err(id);  // as rdma-core on IB/RoCE: the QP goes to ERR first
    if (id->state == IdState::kEstablished || id->state == IdState::kAccept) {
      if (id->conn && id->dev->mgr->disconnect(id->conn, s.now())) wait = true;
      id->state = IdState::kDisconnected;
    } else if (id->state == IdState::kDisconnected) {
      // The peer disconnected first, or our DREQ is out: a sync id waits for the
      // DISCONNECTED event unless it took it already.
      for (Event* e : channel_of(id->id.channel)->q)
        if (e->owner == id && !e->dead) wait = true;
      if (!id->disconnected_event) wait = true;
    } else if (id->state != IdState::kConnResp && id->state != IdState::kConnect) {
      return fail(EINVAL);
    }
  }
  s.kick();
  return wait ? complete(id) : 0;
}

UROCE_CM_EXPORT int rdma_init_qp_attr(rdma_cm_id* cid, ibv_qp_attr* attr, int* mask) {
  if (!cid || !attr || !mask) return fail(EINVAL);
  Service& s = Service::get();
  std::lock_guard<std::mutex> g(s.mu);
  if (int e = init_qp_attr(*id_of(cid), attr, mask)) return fail(e);
  return 0;
}

UROCE_CM_EXPORT int rdma_set_option(rdma_cm_id* cid, int level, int optname, void* optval,
                                    size_t optlen) {
  if (!cid || !optval) return fail(EINVAL);
  Id* id = id_of(cid);
  if (level == RDMA_OPTION_ID) {
    switch (optname) {
      case RDMA_OPTION_ID_TOS:
        if (optlen != sizeof(uint8_t)) return fail(EINVAL);
        id->tos = *static_cast<uint8_t*>(optval);
        return 0;
      case RDMA_OPTION_ID_REUSEADDR: {
        // The kernel's rdma_set_reuseaddr: any value sets it while idle; turning it on is
        // refused only once the id listens.
        if (optlen != sizeof(int)) return fail(EINVAL);
        const bool on = *static_cast<int*>(optval) != 0;
        std::lock_guard<std::mutex> g(Service::get().mu);
        if (!((on && id->state != IdState::kListen) || id->state == IdState::kIdle))
          return fail(EINVAL);
        id->reuseaddr = on;
        return 0;
      }
      case RDMA_OPTION_ID_AFONLY: {
        // The kernel's rdma_set_afonly: before the id listens or resolves an address.
        if (optlen != sizeof(int)) return fail(EINVAL);
        std::lock_guard<std::mutex> g(Service::get().mu);
        if (id->state != IdState::kIdle && id->state != IdState::kBound) return fail(EINVAL);
        id->afonly = *static_cast<int*>(optval) != 0;
        return 0;
      }
      case RDMA_OPTION_ID_ACK_TIMEOUT:
        // As the kernel (rdma_set_ack_timeout): connected QP types only; used from the next
        // move to RTS (rdma_init_qp_attr, rdma_accept, rdma_connect).
        if (optlen != sizeof(uint8_t)) return fail(EINVAL);
        if (cid->qp_type != IBV_QPT_RC && cid->qp_type != IBV_QPT_XRC_SEND) return fail(EINVAL);
        id->ack_timeout = *static_cast<uint8_t*>(optval);
        return 0;
    }
  }
  if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
    return set_ib_path(id, optval, optlen);
  return fail(ENOSYS);
}

UROCE_CM_EXPORT int rdma_migrate_id(rdma_cm_id* cid, rdma_event_channel* channel) {
  if (!cid) return fail(EINVAL);
  Id* id = id_of(cid);
  if (id->sync && !channel) return fail(EINVAL);
  rdma_event_channel* own = nullptr;
  if (!channel) {
    own = rdma_create_event_channel();
    if (!own) return -1;
    channel = own;
  }
  // As rdma-core: a synchronous id's last event (the one its call left in id->event) is
  // acked first, or the wait below would wait for itself (libfabric's verbs provider resolves
  // an rdma_create_ep id, then migrates it to its event queue's channel).
  if (id->sync && id->id.event) {
    rdma_ack_cm_event(id->id.event);
    id->id.event = nullptr;
  }
  Service& s = Service::get();
  Channel* old_own = nullptr;
  {
    std::unique_lock<std::mutex> g(s.mu);
    // As the kernel's ucma_migrate_id: the id's events not yet taken move to the new channel
    // (a dead placeholder keeps the old channel's count right), and the call waits until the
    // program has acked those it took from the old one.
    Channel* from = channel_of(id->id.channel);
    Channel* to = channel_of(channel);
    if (from != to) {
      for (Event*& e : from->q) {
        if (e->owner != id || e->dead) continue;
        auto* placeholder = new Event;
        placeholder->owner = id;
        placeholder->dead = true;
        to->q.push_back(e);
        e = placeholder;
        uint64_t one = 1;
        ssize_t r = write(to->ch.fd, &one, sizeof one);
        (void)r;
      }
    }
    s.acked.wait(g, [&] { return id->unacked <= 0; });
    if (id->sync) old_own = id->own;
    id->sync = own != nullptr;
    id->own = own ? channel_of(own) : nullptr;
    id->id.channel = channel;
  }
  if (old_own) rdma_destroy_event_channel(&old_own->ch);
  return 0;
}

UROCE_CM_EXPORT int rdma_notify(rdma_cm_id* cid, ibv_event_type /*event*/) {
  // IBV_EVENT_COMM_EST before the RTU: the connection is used, so it is established.
  return cid ? 0 : fail(EINVAL);
}

UROCE_CM_EXPORT __be16 rdma_get_src_port(rdma_cm_id* cid) {
  return cid ? htobe16(port_of(&cid->route.addr.src_addr)) : 0;
}

UROCE_CM_EXPORT __be16 rdma_get_dst_port(rdma_cm_id* cid) {
  return cid ? htobe16(port_of(&cid->route.addr.dst_addr)) : 0;
}
