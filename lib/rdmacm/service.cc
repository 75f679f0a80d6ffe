/**
 * @file service.cc
 * @brief The process's CM service (cma.h): devices opened on demand, the background thread
 * that feeds each device's CM state machine (lib/cm/manager.h) with the MADs of its QP1 and
 * with time, and the translation of the machine's events into rdma_cm events
 * (rdma_get_cm_event(3): CONNECT_REQUEST, CONNECT_RESPONSE/ESTABLISHED, REJECTED,
 * UNREACHABLE, DISCONNECTED).
 *
 * CM timing: a REQ, REP, DREQ or SIDR_REQ is resent every kResponseTimeout, kMaxRetries
 * times; a peer that never answers ends in UNREACHABLE (status -ETIMEDOUT) after about 4 s.
 * The only clock read of librdmacm is Service::now() (CLOCK_MONOTONIC, as libibverbs').
 */
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "cm/host_cm.h"
#include "config/config.h"
#include "rdmacm/cma.h"
#include "transport/wire/cm_ip.h"

namespace uroce::rdmacm {

namespace w = wire::cm;

namespace {

constexpr Duration kResponseTimeout = Duration::millis(250);
constexpr int kMaxRetries = 15;
constexpr Duration kTimewait = Duration::seconds(1);
constexpr size_t kIpHdr = w::kIpCmHeaderLen;

uint16_t ps_of(const Id& id) { return static_cast<uint16_t>(id.id.ps); }

}  // namespace

Timestamp Service::now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Timestamp{int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec};
}

Service& Service::get() {
  static Service* s = new Service();  // never destroyed: ids may outlive static destructors
  return *s;
}

Service::Service() {
  std::string err;
  auto cfg = config::load(&err);
  if (!cfg) {
    std::fprintf(stderr, "uroce: librdmacm: %s\n", err.c_str());
  } else {
    for (size_t d = 0; d < cfg->devices.size(); ++d) {
      names_.push_back(cfg->devices[d].name);
      netdev_.push_back(!cfg->devices[d].netdev.empty());
      const auto& as = cfg->devices[d].addresses;
      for (size_t i = 0; i < as.size(); ++i)
        config_addrs_.push_back(
            {static_cast<int>(d), static_cast<int>(i), as[i].gid, as[i].prefix});
    }
  }
  devices_.resize(names_.size());
  std::random_device rd;
  next_port_ = static_cast<uint16_t>(32768 + rd() % 28000);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

const std::vector<LocalAddr>& Service::addrs() {
  addrs_ = config_addrs_;
  for (size_t d = 0; d < netdev_.size(); ++d) {
    if (!netdev_[d]) continue;
    Device* dev = open_device(static_cast<int>(d));
    ibv_port_attr pa{};
    if (!dev || ibv_query_port(dev->verbs, 1, &pa) != 0) continue;
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
      ibv_gid g{};
      if (ibv_query_gid(dev->verbs, 1, i, &g) != 0) continue;
      Gid gid;
      std::memcpy(gid.raw.data(), g.raw, 16);
      if (!gid.is_zero()) addrs_.push_back({static_cast<int>(d), i, gid, 0});
    }
  }
  return addrs_;
}

std::optional<LocalAddr> Service::route_to(const std::optional<Gid>& src, const Gid& dst) {
  const std::vector<LocalAddr>& all = addrs();
  if ((src && !is_any(*src)) || find_local(all, dst)) return route(all, src, dst);
  for (size_t d = 0; d < netdev_.size(); ++d) {
    if (!netdev_[d] || !devices_[d]) continue;
    int index = -1;
    if (uroce_route_gid(devices_[d]->verbs, dst.raw.data(), &index) != 0) continue;
    for (const LocalAddr& a : all)
      if (a.device == static_cast<int>(d) && a.gid_index == index) return a;
  }
  return route(config_addrs_, std::nullopt, dst);
}

Device* Service::device_of(ibv_context* verbs) {
  for (auto& d : devices_)
    if (d && d->verbs == verbs) return d.get();
  return nullptr;
}

Device* Service::open_device(int index) {
  if (index < 0 || index >= static_cast<int>(devices_.size())) {
    errno = ENODEV;
    return nullptr;
  }
  if (devices_[index]) return devices_[index].get();
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_device* found = nullptr;
  for (int i = 0; list && i < n; ++i)
    if (names_[index] == ibv_get_device_name(list[i])) found = list[i];
  ibv_context* verbs = found ? ibv_open_device(found) : nullptr;
  int saved = errno;
  if (list) ibv_free_device_list(list);
  if (!verbs) {
    errno = found ? saved : ENODEV;
    return nullptr;
  }
  auto dev = std::make_unique<Device>();
  dev->index = index;
  dev->name = names_[index];
  dev->verbs = verbs;
  dev->gsi = uroce_gsi_open(verbs);
  dev->pd = ibv_alloc_pd(verbs);
  ibv_device_attr da{};
  ibv_port_attr pa{};
  if (!dev->gsi || !dev->pd || ibv_query_device(verbs, &da) || ibv_query_port(verbs, 1, &pa)) {
    saved = errno ? errno : ENODEV;
    if (dev->pd) ibv_dealloc_pd(dev->pd);
    if (dev->gsi) uroce_gsi_close(dev->gsi);
    ibv_close_device(verbs);
    errno = saved;
    return nullptr;
  }
  dev->active_mtu = static_cast<uint8_t>(pa.active_mtu);
  dev->max_responder_resources = static_cast<uint8_t>(std::min(da.max_qp_rd_atom, 255));
  dev->max_initiator_depth = static_cast<uint8_t>(std::min(da.max_qp_init_rd_atom, 255));
  cm::Config mc;
  mc.ca_guid = be64toh(ibv_get_device_guid(verbs->device));
  std::random_device rd;
  mc.first_comm_id = rd() | 1;
  mc.response_timeout = kResponseTimeout;
  mc.max_retries = kMaxRetries;
  mc.timewait = kTimewait;
  // Shared through uroce-hostd: the daemon steers each MAD to the process whose number
  // prefixes the comm ID it echoes (cm::HostCm), and answers the ones for nobody itself.
  if (const int slot = uroce_shared_slot(verbs); slot > 0) {
    dev->shared = true;
    mc.id_prefix_bits = cm::HostCm::kClientBits;
    mc.id_prefix = static_cast<uint32_t>(slot);
  }
  Device* raw = dev.get();
  dev->mgr = std::make_unique<cm::Manager>(
      mc, [this, raw](const Gid& dst, std::span<const uint8_t, w::kMadLen> mad) {
        // The source address is the device's address that routes to dst.
        Gid src;
        if (auto r = route_to(std::nullopt, dst); r && r->device == raw->index) {
          src = r->gid;
        } else {
          for (const LocalAddr& a : addrs_)
            if (a.device == raw->index && a.gid.is_ipv4_mapped() == dst.is_ipv4_mapped())
              src = a.gid;
        }
        if (src.is_zero()) return;
        uroce_gsi_mad m{};
        std::memcpy(m.peer_gid, dst.raw.data(), 16);
        std::memcpy(m.local_gid, src.raw.data(), 16);
        m.peer_qpn = 1;
        std::memcpy(m.mad, mad.data(), mad.size());
        uroce_gsi_send(raw->gsi, &m);  // a full queue loses the MAD; the CM resends
      });
  devices_[index] = std::move(dev);
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { thread_main(); });
    // Stops the thread at exit, before libibverbs' own handler stops its progress threads:
    // handlers run in reverse order of registration, and libibverbs registered its handler
    // when the device opened above.
    std::atexit([] {
      Service& s = Service::get();
      {
        std::lock_guard<std::mutex> g(s.mu);
        s.stop_ = true;
      }
      s.kick();
      if (s.thread_.joinable()) s.thread_.join();
    });
  }
  kick();
  return raw;
}

void Service::kick() {
  uint64_t one = 1;
  ssize_t r = write(wake_fd_, &one, sizeof one);
  (void)r;
}

Event* Service::deliver(Id* id, rdma_cm_event_type type, int status, Channel* ch) {
  auto* e = new Event;
  e->ev.id = &id->id;
  e->ev.event = type;
  e->ev.status = status;
  e->owner = id;
  if (!ch) ch = channel_of(id->id.channel);
  ch->q.push_back(e);
  uint64_t one = 1;
  ssize_t r = write(ch->ch.fd, &one, sizeof one);
  (void)r;
  return e;
}

void Service::map_conn(Id* id) { conns_[{id->dev, id->conn}] = id; }

void Service::unmap_conn(Id* id) {
  if (id->conn) conns_.erase({id->dev, id->conn});
}

void Service::remove_listener(Id* id) { std::erase(listeners_, id); }

uint16_t Service::claim_port(uint16_t ps, const Gid& gid, uint16_t port, bool reuse) {
  auto key = [&](uint16_t p) { return std::make_tuple(ps, gid.raw, p); };
  if (port) {
    auto it = ports_.find(key(port));
    if (it == ports_.end()) {
      ports_[key(port)] = PortUse{1, reuse, false};
      return port;
    }
    PortUse& u = it->second;
    if (!reuse || !u.reuse || u.listening) return 0;
    u.ids++;
    return port;
  }
  for (int tries = 0; tries < 28000; ++tries) {
    uint16_t p = next_port_++;
    if (next_port_ < 32768 || next_port_ >= 61000) next_port_ = 32768;
    if (!ports_.count(key(p))) {
      ports_[key(p)] = PortUse{1, reuse, false};
      return p;
    }
  }
  return 0;
}

void Service::release_port(uint16_t ps, const Gid& gid, uint16_t port) {
  auto it = ports_.find(std::make_tuple(ps, gid.raw, port));
  if (it != ports_.end() && --it->second.ids <= 0) ports_.erase(it);
}

bool Service::listen_port(uint16_t ps, const Gid& gid, uint16_t port) {
  auto it = ports_.find(std::make_tuple(ps, gid.raw, port));
  if (it == ports_.end()) return true;  // not claimed by this id (nothing to share)
  if (it->second.ids > 1) return false;
  it->second.listening = true;
  it->second.reuse = false;
  return true;
}

Id* Service::listener_for(Device* dev, uint64_t service_id, const Gid& dst) {
  auto ps = w::ip_port_space(service_id);
  if (!ps) return nullptr;
  const uint16_t port = w::ip_port(service_id);
  Id* any = nullptr;
  for (Id* l : listeners_) {
    if (l->state != IdState::kListen || ps_of(*l) != *ps || l->sport != port) continue;
    if (l->dev && l->dev != dev) continue;
    if (l->afonly && l->sgid.is_zero() && dst.is_ipv4_mapped()) continue;
    if (l->sgid == dst) return l;
    if (is_any(l->sgid)) any = l;
  }
  return any;
}

// ---- The thread -------------------------------------------------------------------------------

void Service::thread_main() {
  pthread_setname_np(pthread_self(), "uroce-cm");
  std::vector<pollfd> fds;
  std::vector<uroce_gsi_mad> mads(32);
  for (;;) {
    int timeout_ms = -1;
    fds.clear();
    {
      std::lock_guard<std::mutex> g(mu);
      if (stop_) return;
      fds.push_back({wake_fd_, POLLIN, 0});
      Timestamp deadline = Timestamp::never();
      for (auto& d : devices_) {
        if (!d) continue;
        fds.push_back({uroce_gsi_fd(d->gsi), POLLIN, 0});
        deadline = earliest(deadline, d->mgr->next_deadline());
      }
      if (!deadline.is_never()) {
        int64_t left = (deadline - now()).ns;
        timeout_ms =
            left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left / 1'000'000 + 1, 1000));
      }
    }
    poll(fds.data(), fds.size(), timeout_ms);
    for (const pollfd& p : fds) {
      uint64_t v;
      if (p.revents & POLLIN) {
        ssize_t r = read(p.fd, &v, sizeof v);
        (void)r;
      }
    }
    std::lock_guard<std::mutex> g(mu);
    if (stop_) return;
    const Timestamp t = now();
    for (auto& d : devices_) {
      if (!d) continue;
      int n;
      if (d->removed) continue;
      while ((n = uroce_gsi_recv(d->gsi, mads.data(), static_cast<int>(mads.size()))) > 0) {
        for (int i = 0; i < n; ++i) {
          Gid src;
          std::memcpy(src.raw.data(), mads[i].peer_gid, 16);
          d->mgr->on_mad(src, std::span<const uint8_t>(mads[i].mad, w::kMadLen), t);
        }
        if (n < static_cast<int>(mads.size())) break;
      }
      if (n < 0 && errno == ENODEV) {
        on_device_removed(d.get());
        continue;
      }
      d->mgr->on_timer(t);
      while (auto e = d->mgr->poll_event()) on_manager_event(d.get(), *e);
    }
  }
}

void Service::on_device_removed(Device* dev) {
  dev->removed = true;
  std::vector<Id*> ids;
  for (const auto& [key, id] : conns_)
    if (key.first == dev) ids.push_back(id);
  for (Id* l : listeners_)
    if (l->dev == dev && std::find(ids.begin(), ids.end(), l) == ids.end()) ids.push_back(l);
  for (Id* id : ids) deliver(id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
}

// ---- Manager events -> rdma_cm events ---------------------------------------------------------

namespace {

void copy_private(Event* ev, const uint8_t* data, size_t len) {
  len = std::min(len, sizeof ev->data);
  std::memcpy(ev->data, data, len);
  ev->ev.param.conn.private_data = ev->data;
  ev->ev.param.conn.private_data_len = static_cast<uint8_t>(len);
}

void fill_ud_param(Event* ev, const Id& id) {
  rdma_ud_param& u = ev->ev.param.ud;
  u.ah_attr.is_global = 1;
  std::memcpy(u.ah_attr.grh.dgid.raw, id.dgid.raw.data(), 16);
  u.ah_attr.grh.sgid_index = static_cast<uint8_t>(id.sgid_index);
  u.ah_attr.grh.hop_limit = 64;
  u.ah_attr.grh.traffic_class = id.tos;
  u.ah_attr.port_num = 1;
}

}  // namespace

void Service::on_manager_event(Device* dev, cm::Event& e) {
  using T = cm::EventType;
  if (e.type == T::kConnectRequest) return on_connect_request(dev, e);
  if (e.type == T::kSidrRequest) return on_sidr_request(dev, e);
  auto it = conns_.find({dev, e.conn});
  if (it == conns_.end()) return;  // its id is gone
  Id* id = it->second;
  switch (e.type) {
    case T::kConnectResponse: {
      const w::Rep& r = *e.rep;
      // An XRC target answers with its QPN as the EECN (cm::Manager).
      id->remote_qpn = id->id.qp_type == IBV_QPT_XRC_SEND ? r.local_eecn : r.local_qpn;
      id->remote_psn = r.starting_psn;
      id->initiator_depth = std::min(id->initiator_depth, r.responder_resources);
      id->responder_resources = std::min(id->responder_resources, r.initiator_depth);
      id->rnr_retry = r.rnr_retry_count;
      id->remote_ece.vendor_id = r.vendor_id;
      id->remote_ece.options = e.ece_options;
      id->state = IdState::kConnResp;
      Event* ev = deliver(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
      copy_private(ev, r.private_data.data(), r.private_data.size());
      rdma_conn_param& c = ev->ev.param.conn;
      c.responder_resources = r.initiator_depth;
      c.initiator_depth = r.responder_resources;
      c.flow_control = r.end_to_end_flow_control;
      c.rnr_retry_count = r.rnr_retry_count;
      c.srq = r.srq;
      c.qp_num = id->remote_qpn;
      ev->post = Event::Post::kConnResp;
      break;
    }
    case T::kEstablished: {
      id->state = IdState::kEstablished;
      Event* ev = deliver(id, RDMA_CM_EVENT_ESTABLISHED, 0);
      rdma_conn_param& c = ev->ev.param.conn;
      c.responder_resources = id->responder_resources;
      c.initiator_depth = id->initiator_depth;
      c.qp_num = id->remote_qpn;
      break;
    }
    case T::kRejected: {
      id->state = IdState::kClosed;
      Event* ev = deliver(id, RDMA_CM_EVENT_REJECTED, e.reason);
      copy_private(ev, e.private_data.data(), e.private_data.size());
      ev->post = Event::Post::kRejected;
      unmap_conn(id);
      id->conn = 0;
      break;
    }
    case T::kTimeout: {
      id->state = IdState::kClosed;
      deliver(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
      unmap_conn(id);
      id->conn = 0;
      break;
    }
    case T::kDisconnected: {
      if (id->disconnected_event) break;
      id->disconnected_event = true;
      id->state = IdState::kDisconnected;
      Event* ev = deliver(id, RDMA_CM_EVENT_DISCONNECTED, 0);
      copy_private(ev, e.private_data.data(), e.private_data.size());
      break;
    }
    case T::kSidrReply: {
      const w::SidrRep& r = *e.sidr_rep;
      unmap_conn(id);
      id->conn = 0;
      if (r.status != static_cast<uint8_t>(w::SidrStatus::kValid)) {
        id->state = IdState::kClosed;
        deliver(id, RDMA_CM_EVENT_UNREACHABLE, r.status);
        break;
      }
      id->state = IdState::kEstablished;
      id->remote_qpn = r.qpn;
      id->remote_qkey = r.qkey;
      Event* ev = deliver(id, RDMA_CM_EVENT_ESTABLISHED, 0);
      copy_private(ev, r.private_data.data(), r.private_data.size());
      const uint8_t* pd = ev->data;
      fill_ud_param(ev, *id);
      ev->ev.param.ud.private_data = pd;
      ev->ev.param.ud.private_data_len = static_cast<uint8_t>(r.private_data.size());
      ev->ev.param.ud.qp_num = r.qpn;
      ev->ev.param.ud.qkey = r.qkey;
      break;
    }
    default: break;
  }
}

namespace {

/// A new passive id for a request that `listener` takes (its channel, context, device).
Id* new_child(Service& s, Id* listener, Device* dev, const w::IpCmHeader& h) {
  auto* c = new Id;
  c->id.context = listener->id.context;
  c->id.ps = listener->id.ps;
  c->id.qp_type = listener->id.qp_type;
  c->id.verbs = dev->verbs;
  c->id.pd = dev->pd;
  c->id.port_num = 1;
  c->dev = dev;
  c->sgid = h.dst;
  c->dgid = h.src;
  if (auto a = find_local(s.addrs(), h.dst)) c->sgid_index = a->gid_index;
  c->sport = listener->sport;
  c->dport = h.src_port;
  c->tos = listener->tos;  // a SIDR request carries no path: the listener's
  to_sockaddr(c->sgid, c->sport, &c->id.route.addr.src_storage);
  to_sockaddr(c->dgid, c->dport, &c->id.route.addr.dst_storage);
  std::memcpy(c->id.route.addr.addr.ibaddr.sgid.raw, c->sgid.raw.data(), 16);
  std::memcpy(c->id.route.addr.addr.ibaddr.dgid.raw, c->dgid.raw.data(), 16);
  c->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
  c->path_mtu = dev->active_mtu;
  if (listener->sync) {
    // rdma_create_ep's passive side: the new id waits on a channel of its own.
    c->sync = true;
    c->own = channel_of(rdma_create_event_channel());
    c->id.channel = &c->own->ch;
  } else {
    c->id.channel = listener->id.channel;
  }
  std::random_device rd;
  c->local_psn = rd() & 0xffffff;
  return c;
}

}  // namespace

void Service::on_connect_request(Device* dev, cm::Event& e) {
  const w::Req& r = *e.req;
  auto h = w::parse_ip_cm_header(r.private_data);
  Id* l = h ? listener_for(dev, r.service_id, h->dst) : nullptr;
  // As the kernel's cma_ib_check_req_qp_type: an XRC REQ is for an XRC_RECV listener only,
  // and the other way round.
  if (!l || find_local(addrs(), h->dst) == std::nullopt ||
      w::is_xrc(r) != (l->id.qp_type == IBV_QPT_XRC_RECV)) {
    dev->mgr->reject(e.conn, {}, now());
    return;
  }
  Id* c = new_child(*this, l, dev, *h);
  c->conn = e.conn;
  c->remote_qpn = r.local_qpn;
  c->remote_psn = r.starting_psn;
  c->responder_resources = r.initiator_depth;
  c->initiator_depth = r.responder_resources;
  c->retry_count = r.retry_count;
  c->rnr_retry = r.rnr_retry_count;
  c->remote_ece.vendor_id = r.vendor_id;
  c->remote_ece.options = e.ece_options;
  if (r.path_mtu && r.path_mtu < c->path_mtu) c->path_mtu = r.path_mtu;
  // The passive QP's path is the REQ's primary path (the kernel's cm_req_handler builds its
  // address vector from it), so its traffic class is the active side's TOS, not the
  // listener's.
  c->tos = r.primary.traffic_class;
  c->state = IdState::kReqRcvd;
  map_conn(c);
  Event* ev = deliver(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, channel_of(l->id.channel));
  ev->ev.listen_id = &l->id;
  copy_private(ev, r.private_data.data() + kIpHdr, r.private_data.size() - kIpHdr);
  rdma_conn_param& p = ev->ev.param.conn;
  p.responder_resources = r.initiator_depth;
  p.initiator_depth = r.responder_resources;
  p.flow_control = r.end_to_end_flow_control;
  p.retry_count = r.retry_count;
  p.rnr_retry_count = r.rnr_retry_count;
  p.srq = r.srq;
  p.qp_num = r.local_qpn;
}

void Service::on_sidr_request(Device* dev, cm::Event& e) {
  const w::SidrReq& r = *e.sidr_req;
  auto h = w::parse_ip_cm_header(r.private_data);
  Id* l = h ? listener_for(dev, r.service_id, h->dst) : nullptr;
  if (!l || find_local(addrs(), h->dst) == std::nullopt) {
    dev->mgr->sidr_reply(e.conn, static_cast<uint8_t>(w::SidrStatus::kServiceIdNotSupported), 0, 0,
                         {}, now());
    return;
  }
  Id* c = new_child(*this, l, dev, *h);
  c->conn = e.conn;
  c->state = IdState::kReqRcvd;
  map_conn(c);
  Event* ev = deliver(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, channel_of(l->id.channel));
  ev->ev.listen_id = &l->id;
  copy_private(ev, r.private_data.data() + kIpHdr, r.private_data.size() - kIpHdr);
  const uint8_t* pd = ev->data;
  const uint8_t len = ev->ev.param.conn.private_data_len;
  fill_ud_param(ev, *c);
  ev->ev.param.ud.private_data = pd;
  ev->ev.param.ud.private_data_len = len;
  ev->ev.param.ud.qkey = RDMA_UDP_QKEY;
}

}  // namespace uroce::rdmacm
