/**
 * @file host_cm.cc
 * @brief HostCm (host_cm.h): the host's RDMA CM port space and CM MAD steering for
 * uroce-hostd.
 */
#include "cm/host_cm.h"

#include <algorithm>
#include <cerrno>

#include "transport/wire/cm_ip.h"

namespace uroce::cm {

namespace w = wire::cm;

namespace {

/// The MAD that answers `req_hdr` with `msg` (same transaction ID, as IBA 13.4.6.3 wants).
std::array<uint8_t, w::kMadLen> answer(const w::MadHeader& req_hdr, w::Message msg) {
  w::Mad m;
  m.hdr.tid = req_hdr.tid;
  m.msg = std::move(msg);
  std::array<uint8_t, w::kMadLen> out{};
  w::build_cm_mad(m, out);
  return out;
}

/// The local communication ID a message carries (0 for SIDR).
uint32_t local_id_of(const w::Message& m) {
  return std::visit(
      [](const auto& x) -> uint32_t {
        if constexpr (requires { x.local_comm_id; })
          return x.local_comm_id;
        else
          return 0;
      },
      m);
}

/// The remote communication ID a message carries: the receiver's own ID (0 for REQ, SIDR).
uint32_t remote_id_of(const w::Message& m) {
  return std::visit(
      [](const auto& x) -> uint32_t {
        if constexpr (requires { x.remote_comm_id; })
          return x.remote_comm_id;
        else
          return 0;
      },
      m);
}

}  // namespace

bool HostCm::add_client(uint32_t client) {
  if (client == 0 || client > kMaxClient || alive_[client]) return false;
  alive_[client] = true;
  return true;
}

int HostCm::bind(uint32_t client, uint16_t ps, uint16_t port, const Gid& addr) {
  if (client == 0 || client > kMaxClient || !alive_[client]) return EINVAL;
  auto [lo, hi] = ports_.equal_range(key(ps, port));
  for (auto it = lo; it != hi; ++it) {
    const Binding& b = it->second;
    if (b.client != client && (b.addr.is_zero() || addr.is_zero() || b.addr == addr))
      return EADDRINUSE;
  }
  ports_.emplace(key(ps, port), Binding{client, addr, false});
  return 0;
}

void HostCm::release(uint32_t client, uint16_t ps, uint16_t port, const Gid& addr) {
  auto [lo, hi] = ports_.equal_range(key(ps, port));
  for (auto it = lo; it != hi; ++it)
    if (it->second.client == client && it->second.addr == addr) {
      ports_.erase(it);
      return;
    }
}

int HostCm::listen(uint32_t client, uint16_t ps, uint16_t port, const Gid& addr) {
  auto [lo, hi] = ports_.equal_range(key(ps, port));
  for (auto it = lo; it != hi; ++it)
    if (it->second.client == client && it->second.addr == addr) {
      it->second.listening = true;
      return 0;
    }
  return EINVAL;
}

bool HostCm::bound(uint32_t client, uint16_t ps, uint16_t port, const Gid& addr) const {
  auto [lo, hi] = ports_.equal_range(key(ps, port));
  return std::any_of(
      lo, hi, [&](const auto& kv) { return kv.second.client == client && kv.second.addr == addr; });
}

const HostCm::Binding* HostCm::listener(uint16_t ps, uint16_t port, const Gid& local) const {
  const Binding* any = nullptr;
  auto [lo, hi] = ports_.equal_range(key(ps, port));
  for (auto it = lo; it != hi; ++it) {
    const Binding& b = it->second;
    if (!b.listening) continue;
    if (b.addr == local) return &b;  // a listener on the very address wins
    if (b.addr.is_zero()) any = &b;
  }
  return any;
}

HostCm::Route HostCm::inbound(const Gid& peer, const Gid& local, std::span<const uint8_t> mad,
                              Timestamp now) {
  Route r;
  auto m = w::parse_cm_mad(mad);
  if (!m) {
    ++counters_.dropped_in;
    return r;
  }
  if (const auto* req = std::get_if<w::Req>(&m->msg)) {
    const auto ps = w::ip_port_space(req->service_id);
    const Binding* b = ps ? listener(*ps, w::ip_port(req->service_id), local) : nullptr;
    if (b) {
      pending_[{peer.raw, req->local_comm_id}] =
          PendingReq{b->client, req->local_qpn, local, now + cfg_.timewait};
      r.to = To::kClient;
      r.client = b->client;
      return r;
    }
    // As the kernel's ib_cm for a service nobody listens on (cm_match_req).
    w::Rej rej;
    rej.remote_comm_id = req->local_comm_id;
    rej.message_rejected = w::MsgRef::kReq;
    rej.reason = static_cast<uint16_t>(w::RejReason::kInvalidServiceId);
    r.to = To::kAnswered;
    r.reply = Outgoing{peer, local, answer(m->hdr, rej)};
    ++counters_.rejected_no_listener;
    return r;
  }
  if (const auto* sreq = std::get_if<w::SidrReq>(&m->msg)) {
    const auto ps = w::ip_port_space(sreq->service_id);
    const Binding* b = ps ? listener(*ps, w::ip_port(sreq->service_id), local) : nullptr;
    if (b) {
      r.to = To::kClient;
      r.client = b->client;
      return r;
    }
    w::SidrRep rep;
    rep.request_id = sreq->request_id;
    rep.status = static_cast<uint8_t>(w::SidrStatus::kServiceIdNotSupported);
    rep.service_id = sreq->service_id;
    r.to = To::kAnswered;
    r.reply = Outgoing{peer, local, answer(m->hdr, rep)};
    ++counters_.sidr_unsupported;
    return r;
  }
  // Every other message names its receiver by the ID it echoes.
  const auto* srep = std::get_if<w::SidrRep>(&m->msg);
  const uint32_t ours = srep ? srep->request_id : remote_id_of(m->msg);
  const uint32_t client = client_of(ours);
  if (client && alive_[client]) {
    if (const auto* rep = std::get_if<w::Rep>(&m->msg)) {
      if (auto it = conns_.find(ours); it != conns_.end()) {
        it->second.remote_comm_id = rep->local_comm_id;
        it->second.remote_qpn = it->second.xrc ? rep->local_eecn : rep->local_qpn;
        it->second.peer_knows = true;
      }
    } else if (std::holds_alternative<w::Rej>(m->msg) || std::holds_alternative<w::Drep>(m->msg)) {
      conns_.erase(ours);
    }
    r.to = To::kClient;
    r.client = client;
    return r;
  }
  const auto* dreq = std::get_if<w::Dreq>(&m->msg);
  auto dead = dead_.find(ours);
  if (dead != dead_.end() && (dreq || std::holds_alternative<w::Drep>(m->msg)))
    dead->second.answered = true;
  if (dreq) {
    // The process is gone (or never was): the peer gets its DREP, as from a live one.
    w::Drep drep;
    drep.local_comm_id = ours;
    drep.remote_comm_id = dreq->local_comm_id;
    r.to = To::kAnswered;
    r.reply = Outgoing{peer, local, answer(m->hdr, drep)};
    ++counters_.drep_for_gone;
    return r;
  }
  if (dead != dead_.end()) {
    r.to = To::kAnswered;  // the DREP of our DREQ, or a late MAD of that connection
    return r;
  }
  ++counters_.dropped_in;
  return r;
}

HostCm::Refusal HostCm::outbound(uint32_t client, const Gid& local, const Gid& peer,
                                 std::span<const uint8_t> mad, Timestamp now) {
  (void)now;
  auto m = w::parse_cm_mad(mad);
  if (!m) {
    ++counters_.refused_out;
    return Refusal::kMalformed;
  }
  Refusal why = Refusal::kNone;
  if (const auto* sreq = std::get_if<w::SidrReq>(&m->msg)) {
    if (client_of(sreq->request_id) != client) why = Refusal::kForeignId;
  } else if (const auto* srep = std::get_if<w::SidrRep>(&m->msg)) {
    const auto ps = w::ip_port_space(srep->service_id);
    auto [lo, hi] = ports_.equal_range(key(ps.value_or(0), w::ip_port(srep->service_id)));
    if (!ps || std::none_of(lo, hi, [&](const auto& kv) {
          return kv.second.client == client && kv.second.listening;
        }))
      why = Refusal::kNotListening;
  } else {
    const uint32_t id = local_id_of(m->msg);
    // A REJ of a REQ the CM took no ID for may carry 0.
    const bool zero_ok = std::holds_alternative<w::Rej>(m->msg) && id == 0;
    if (!zero_ok && client_of(id) != client) why = Refusal::kForeignId;
  }
  if (why != Refusal::kNone) {
    ++counters_.refused_out;
    return why;
  }
  follow_out(client, local, peer, *m);
  return Refusal::kNone;
}

void HostCm::follow_out(uint32_t client, const Gid& local, const Gid& peer, const w::Mad& m) {
  (void)client;
  const uint32_t id = local_id_of(m.msg);
  if (const auto* req = std::get_if<w::Req>(&m.msg)) {
    conns_[id] = Conn{peer, local, 0, 0, false, w::is_xrc(*req)};
  } else if (const auto* rep = std::get_if<w::Rep>(&m.msg)) {
    Conn c{peer, local, rep->remote_comm_id, 0, true};
    if (auto it = pending_.find({peer.raw, rep->remote_comm_id}); it != pending_.end()) {
      c.remote_qpn = it->second.remote_qpn;
      pending_.erase(it);
    }
    conns_[id] = c;
  } else if (const auto* rej = std::get_if<w::Rej>(&m.msg)) {
    pending_.erase({peer.raw, rej->remote_comm_id});
    conns_.erase(id);
  } else if (std::holds_alternative<w::Dreq>(m.msg) || std::holds_alternative<w::Drep>(m.msg)) {
    conns_.erase(id);  // the client closes it itself
  }
}

HostCm::Outgoing HostCm::dreq_of(uint32_t local_comm_id, const Dead& d) const {
  w::Dreq dreq;
  dreq.local_comm_id = local_comm_id;
  dreq.remote_comm_id = d.remote_comm_id;
  dreq.remote_qpn = d.remote_qpn;
  w::Mad m;
  m.hdr.tid = uint64_t{local_comm_id} << 8;  // the same for every resend, as a CM resends
  m.msg = dreq;
  Outgoing o{d.peer, d.local, {}};
  w::build_cm_mad(m, o.mad);
  return o;
}

std::vector<HostCm::Outgoing> HostCm::drop_client(uint32_t client, Timestamp now) {
  std::vector<Outgoing> out;
  if (client == 0 || client > kMaxClient || !alive_[client]) return out;
  alive_[client] = false;
  for (auto it = ports_.begin(); it != ports_.end();)
    it = it->second.client == client ? ports_.erase(it) : std::next(it);
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (client_of(it->first) != client) {
      ++it;
      continue;
    }
    const Conn& c = it->second;
    Dead d{c.peer,
           c.local,
           c.remote_comm_id,
           c.remote_qpn,
           0,
           !c.peer_knows,
           now + cfg_.response_timeout,
           now + cfg_.timewait};
    if (c.peer_knows) {
      d.sent = 1;
      out.push_back(dreq_of(it->first, d));
      ++counters_.dreq_for_dead;
    }
    dead_[it->first] = d;
    it = conns_.erase(it);
  }
  // REQs it was handed and never answered: rejected, as the kernel's CM does when the
  // listener's id is destroyed before it accepts (REJ "timeout").
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.client != client) {
      ++it;
      continue;
    }
    w::Rej rej;
    rej.remote_comm_id = it->first.second;
    rej.message_rejected = w::MsgRef::kReq;
    rej.reason = static_cast<uint16_t>(w::RejReason::kTimeout);
    Gid peer;
    peer.raw = it->first.first;
    out.push_back(Outgoing{peer, it->second.local, answer(w::MadHeader{}, rej)});
    it = pending_.erase(it);
  }
  return out;
}

std::vector<HostCm::Outgoing> HostCm::timers(Timestamp now) {
  std::vector<Outgoing> out;
  for (auto it = dead_.begin(); it != dead_.end();) {
    Dead& d = it->second;
    if (now >= d.forget_at) {
      it = dead_.erase(it);
      continue;
    }
    if (!d.answered && now >= d.next_send) {
      if (d.sent > cfg_.max_retries) {
        d.answered = true;  // given up, as the CM gives up a DREQ
      } else {
        ++d.sent;
        d.next_send = now + cfg_.response_timeout;
        out.push_back(dreq_of(it->first, d));
      }
    }
    ++it;
  }
  for (auto it = pending_.begin(); it != pending_.end();)
    it = now >= it->second.forget_at ? pending_.erase(it) : std::next(it);
  return out;
}

Timestamp HostCm::next_deadline() const {
  Timestamp t = Timestamp::never();
  for (const auto& [id, d] : dead_) {
    t = std::min(t, d.forget_at);
    if (!d.answered) t = std::min(t, d.next_send);
  }
  for (const auto& [k, p] : pending_) t = std::min(t, p.forget_at);
  return t;
}

size_t HostCm::connections(uint32_t client) const {
  return static_cast<size_t>(std::count_if(
      conns_.begin(), conns_.end(), [&](const auto& kv) { return client_of(kv.first) == client; }));
}

}  // namespace uroce::cm
