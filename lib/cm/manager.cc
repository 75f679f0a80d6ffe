/**
 * @file manager.cc
 * @brief CM connection state machine (see manager.h).
 */
#include "cm/manager.h"

#include <algorithm>
#include <utility>

namespace uroce::cm {

namespace w = wire::cm;

namespace {

/// IBA's timeout encoding: 4.096 us * 2^t.
Duration iba_timeout(uint8_t t) { return Duration::nanos(int64_t{4096} << std::min<int>(t, 31)); }

std::vector<uint8_t> bytes_of(std::span<const uint8_t> s) { return {s.begin(), s.end()}; }

}  // namespace

Event Manager::event_of(EventType type, const Conn& c) {
  Event e;
  e.type = type;
  e.conn = c.local_id;
  e.peer = c.peer;
  return e;
}

Manager::Manager(const Config& cfg, Send send)
    : cfg_(cfg), send_(std::move(send)), next_id_(cfg.first_comm_id ? cfg.first_comm_id : 1) {}

Status Manager::listen(uint64_t service_id) {
  if (std::find(listening_.begin(), listening_.end(), service_id) != listening_.end())
    return Status(EADDRINUSE);
  listening_.push_back(service_id);
  return Status::ok();
}

Status Manager::unlisten(uint64_t service_id) {
  auto it = std::find(listening_.begin(), listening_.end(), service_id);
  if (it == listening_.end()) return Status::not_found();
  listening_.erase(it);
  return Status::ok();
}

Manager::Conn* Manager::find(uint32_t local_id) {
  auto it = conns_.find(local_id);
  return it == conns_.end() ? nullptr : &it->second;
}

Manager::Conn* Manager::find_remote(const Gid& peer, uint32_t remote_id) {
  for (auto& [id, c] : conns_)
    if (c.remote_id == remote_id && c.peer == peer) return &c;
  return nullptr;
}

void Manager::send_once(const Gid& dst, uint64_t tid, const w::Message& m) {
  std::array<uint8_t, w::kMadLen> b;
  w::build_cm_mad(w::Mad{{.tid = tid}, m}, b);
  send_(dst, b);
}

void Manager::send(Conn& c, const w::Message& m, Timestamp now, bool expect_answer,
                   uint32_t attr_mod) {
  w::build_cm_mad(w::Mad{{.tid = c.tid, .attr_mod = attr_mod}, m}, c.last);
  send_(c.peer, c.last);
  c.retries_left = expect_answer ? cfg_.max_retries : 0;
  c.deadline = expect_answer ? now + cfg_.response_timeout : Timestamp::never();
}

void Manager::enter_timewait(Conn& c, Timestamp now) {
  c.state = State::kTimewait;
  c.deadline = now + cfg_.timewait;
}

uint64_t Manager::new_tid(const Conn& c) { return (uint64_t{c.local_id} << 32) | next_tid_++; }

w::Rej Manager::rej_of(const Conn& c, w::RejReason reason, w::MsgRef rejected) {
  w::Rej r;
  r.local_comm_id = c.local_id;
  r.remote_comm_id = c.remote_id;
  r.message_rejected = rejected;
  r.reason = static_cast<uint16_t>(reason);
  return r;
}

Manager::Conn& Manager::new_conn(State state, const Gid& peer) {
  const uint32_t low_bits = 32u - cfg_.id_prefix_bits;
  const uint32_t mask = low_bits >= 32 ? ~0u : (1u << low_bits) - 1;
  const uint32_t base = low_bits >= 32 ? 0 : cfg_.id_prefix << low_bits;
  uint32_t id = base | (next_id_++ & mask);
  // IDs wrap within the prefix; 0 means "none" on the wire.
  while (conns_.count(id) || id == 0) id = base | (next_id_++ & mask);
  Conn& c = conns_[id];
  c.state = state;
  c.local_id = id;
  c.peer = peer;
  return c;
}

uint32_t Manager::connect(const ConnectParams& p, Timestamp now) {
  Conn& c = new_conn(State::kReqSent, p.remote);
  const uint32_t id = c.local_id;
  c.tid = new_tid(c);
  c.active = true;
  c.xrc = p.xrc;
  w::Req r;
  r.local_comm_id = id;
  r.service_id = p.service_id;
  r.local_ca_guid = cfg_.ca_guid;
  r.local_qpn = p.qpn;
  r.initiator_depth = p.initiator_depth;
  r.remote_cm_response_timeout = 20;
  r.local_cm_response_timeout = 20;
  r.end_to_end_flow_control = p.flow_control;
  r.starting_psn = p.starting_psn;
  r.path_mtu = p.path_mtu;
  r.max_cm_retries = static_cast<uint8_t>(std::min(cfg_.max_retries, 15));
  if (p.xrc) {  // an initiator has no receive side: those fields stay 0 (see @file)
    r.transport = w::Transport::kExtended;
    r.extended_transport = w::kExtendedXrc;
  } else {
    r.transport = w::Transport::kRc;
    r.responder_resources = p.responder_resources;
    r.retry_count = p.retry_count;
    r.rnr_retry_count = p.rnr_retry_count;
    r.srq = p.srq;
  }
  r.primary.local_gid = p.local;
  r.primary.remote_gid = p.remote;
  r.primary.hop_limit = p.hop_limit;
  r.primary.traffic_class = p.traffic_class;
  r.primary.local_ack_timeout = p.local_ack_timeout;
  r.vendor_id = p.ece_vendor & 0xffffff;
  r.private_data = p.private_data;
  send(c, r, now, true, p.ece_options);
  return id;
}

Status Manager::accept(uint32_t conn, const AcceptParams& p, Timestamp now) {
  Conn* c = find(conn);
  if (!c || c->state != State::kReqRcvd) return Status::invalid();
  w::Rep r;
  r.local_comm_id = c->local_id;
  r.remote_comm_id = c->remote_id;
  r.starting_psn = p.starting_psn;
  r.responder_resources = p.responder_resources;
  r.rnr_retry_count = p.rnr_retry_count;
  if (c->xrc) {  // the target's QPN as the EECN, receives on its XRC SRQs (see @file)
    r.local_eecn = p.qpn;
    r.srq = true;
  } else {
    r.local_qpn = p.qpn;
    r.initiator_depth = p.initiator_depth;
    r.srq = p.srq;
    r.end_to_end_flow_control = p.flow_control;
  }
  r.local_ca_guid = cfg_.ca_guid;
  r.vendor_id = p.ece_vendor & 0xffffff;
  r.private_data = p.private_data;
  c->state = State::kRepSent;
  send(*c, r, now, true, p.ece_options);
  return Status::ok();
}

Status Manager::reject(uint32_t conn, std::span<const uint8_t> private_data, Timestamp now,
                       w::RejReason reason) {
  Conn* c = find(conn);
  if (!c || (c->state != State::kReqRcvd && c->state != State::kRepRcvd)) return Status::invalid();
  if (private_data.size() > w::kRejPrivateLen) return Status::invalid();
  w::Rej r = rej_of(*c, reason, c->state == State::kReqRcvd ? w::MsgRef::kReq : w::MsgRef::kRep);
  std::copy(private_data.begin(), private_data.end(), r.private_data.begin());
  send_once(c->peer, c->tid, r);
  enter_timewait(*c, now);
  return Status::ok();
}

Status Manager::ready_to_use(uint32_t conn, Timestamp now) {
  Conn* c = find(conn);
  if (!c || c->state != State::kRepRcvd) return Status::invalid();
  w::Rtu r;
  r.local_comm_id = c->local_id;
  r.remote_comm_id = c->remote_id;
  c->state = State::kEstablished;
  send(*c, r, now, false);  // kept: a repeated REP (our RTU lost) is answered with it again
  return Status::ok();
}

Status Manager::disconnect(uint32_t conn, Timestamp now) {
  Conn* c = find(conn);
  if (!c || (c->state != State::kEstablished && c->state != State::kRepSent))
    return Status::invalid();
  w::Dreq d;
  d.local_comm_id = c->local_id;
  d.remote_comm_id = c->remote_id;
  d.remote_qpn = c->remote_qpn;
  c->tid = new_tid(*c);
  c->state = State::kDreqSent;
  send(*c, d, now, true);
  return Status::ok();
}

void Manager::on_mad(const Gid& src, std::span<const uint8_t> mad, Timestamp now) {
  auto m = w::parse_cm_mad(mad);
  if (!m) {
    ++counters_.malformed;
    return;
  }
  const uint64_t tid = m->hdr.tid;
  std::visit(
      [&](const auto& msg) {
        using T = std::decay_t<decltype(msg)>;
        if constexpr (std::is_same_v<T, w::Req>)
          on_req(src, tid, msg, m->hdr.attr_mod, now);
        else if constexpr (std::is_same_v<T, w::Rep>)
          on_rep(tid, msg, m->hdr.attr_mod);
        else if constexpr (std::is_same_v<T, w::Rtu>)
          on_rtu(msg);
        else if constexpr (std::is_same_v<T, w::Rej>)
          on_rej(src, msg, now);
        else if constexpr (std::is_same_v<T, w::Mra>)
          on_mra(msg, now);
        else if constexpr (std::is_same_v<T, w::Dreq>)
          on_dreq(src, tid, msg, now);
        else if constexpr (std::is_same_v<T, w::Drep>)
          on_drep(msg, now);
        else if constexpr (std::is_same_v<T, w::SidrReq>)
          on_sidr_req(src, tid, msg, now);
        else if constexpr (std::is_same_v<T, w::SidrRep>)
          on_sidr_rep(tid, msg, now);
      },
      m->msg);
}

void Manager::on_req(const Gid& src, uint64_t tid, const w::Req& m, uint32_t attr_mod, Timestamp) {
  if (Conn* c = find_remote(src, m.local_comm_id)) {
    ++counters_.duplicate_req;
    if (c->state == State::kRepSent) {  // our REP was lost: send it again
      ++counters_.resent;
      send_(c->peer, c->last);
    }
    return;
  }
  if (!listening(m.service_id)) {
    ++counters_.rejected_no_listener;
    if (cfg_.shared) return;  // the process that listens answers (Config::shared)
    w::Rej r;
    r.remote_comm_id = m.local_comm_id;
    r.message_rejected = w::MsgRef::kReq;
    r.reason = static_cast<uint16_t>(w::RejReason::kInvalidServiceId);
    send_once(src, tid, r);
    return;
  }
  Conn& c = new_conn(State::kReqRcvd, src);
  c.remote_id = m.local_comm_id;
  c.remote_qpn = m.local_qpn;
  c.xrc = w::is_xrc(m);
  c.tid = tid;
  Event e = event_of(EventType::kConnectRequest, c);
  e.req = m;
  e.ece_options = attr_mod;
  emit(std::move(e));
}

void Manager::on_rep(uint64_t tid, const w::Rep& m, uint32_t attr_mod) {
  Conn* c = find(m.remote_comm_id);
  if (c && c->state == State::kReqSent && tid == c->tid) {
    c->remote_id = m.local_comm_id;
    c->remote_qpn = c->xrc ? m.local_eecn : m.local_qpn;
    c->state = State::kRepRcvd;
    c->deadline = Timestamp::never();  // the application answers (ready_to_use / reject)
    Event e = event_of(EventType::kConnectResponse, *c);
    e.rep = m;
    e.ece_options = attr_mod;
    emit(std::move(e));
    return;
  }
  if (c && c->active && c->state == State::kEstablished && c->remote_id == m.local_comm_id) {
    ++counters_.resent;  // the peer did not get our RTU
    send_(c->peer, c->last);
    return;
  }
  ++counters_.unknown_conn;
}

void Manager::on_rtu(const w::Rtu& m) {
  Conn* c = find(m.remote_comm_id);
  if (!c || c->state != State::kRepSent || c->remote_id != m.local_comm_id) {
    ++counters_.unknown_conn;
    return;
  }
  c->state = State::kEstablished;
  c->deadline = Timestamp::never();
  Event e = event_of(EventType::kEstablished, *c);
  emit(std::move(e));
}

void Manager::on_rej(const Gid& src, const w::Rej& m, Timestamp now) {
  // A REJ of a REQ by its own sender (gave up before our REP) knows only its own ID.
  Conn* c = m.remote_comm_id ? find(m.remote_comm_id) : find_remote(src, m.local_comm_id);
  if (!c || (c->state != State::kReqSent && c->state != State::kRepSent &&
             c->state != State::kRepRcvd && c->state != State::kReqRcvd)) {
    ++counters_.unknown_conn;
    return;
  }
  Event e = event_of(EventType::kRejected, *c);
  e.reason = m.reason;
  e.private_data = bytes_of(m.private_data);
  emit(std::move(e));
  enter_timewait(*c, now);
}

void Manager::on_mra(const w::Mra& m, Timestamp now) {
  Conn* c = find(m.remote_comm_id);
  if (!c || (c->state != State::kReqSent && c->state != State::kRepSent)) {
    ++counters_.unknown_conn;
    return;
  }
  // The peer answers later: wait its service timeout on top of ours, retries intact.
  c->deadline = now + iba_timeout(m.service_timeout) + cfg_.response_timeout;
}

void Manager::on_dreq(const Gid& src, uint64_t tid, const w::Dreq& m, Timestamp now) {
  Conn* c = find(m.remote_comm_id);
  const bool ours = c && c->remote_id == m.local_comm_id;
  w::Drep r;
  r.local_comm_id = m.remote_comm_id;
  r.remote_comm_id = m.local_comm_id;
  // Always answered, so the peer never waits on a connection we lost; on a shared port only
  // by the process that has it (the others see the DREQ too).
  if (ours || !cfg_.shared) send_once(src, tid, r);
  if (!ours) {
    ++counters_.unknown_conn;
    return;
  }
  if (c->state == State::kTimewait) return;
  Event e = event_of(EventType::kDisconnected, *c);
  e.private_data = bytes_of(m.private_data);
  emit(std::move(e));
  enter_timewait(*c, now);
}

void Manager::on_drep(const w::Drep& m, Timestamp now) {
  Conn* c = find(m.remote_comm_id);
  if (!c || c->state != State::kDreqSent) {
    ++counters_.unknown_conn;
    return;
  }
  Event e = event_of(EventType::kDisconnected, *c);
  e.private_data = bytes_of(m.private_data);
  emit(std::move(e));
  enter_timewait(*c, now);
}

bool Manager::listening(uint64_t service_id) const {
  return std::find(listening_.begin(), listening_.end(), service_id) != listening_.end();
}

uint32_t Manager::sidr_request(const Gid& remote, uint64_t service_id,
                               std::span<const uint8_t> private_data, Timestamp now) {
  Conn& c = new_conn(State::kSidrSent, remote);
  c.tid = new_tid(c);
  c.active = true;
  c.service_id = service_id;
  w::SidrReq r;
  r.request_id = c.local_id;
  r.service_id = service_id;
  std::copy_n(private_data.begin(), std::min(private_data.size(), r.private_data.size()),
              r.private_data.begin());
  send(c, r, now, true);
  return c.local_id;
}

Status Manager::sidr_reply(uint32_t conn, uint8_t status, uint32_t qpn, uint32_t qkey,
                           std::span<const uint8_t> private_data, Timestamp now) {
  Conn* c = find(conn);
  if (!c || c->state != State::kSidrRcvd || private_data.size() > w::kSidrRepPrivateLen)
    return Status::invalid();
  w::SidrRep r;
  r.request_id = c->remote_id;
  r.status = status;
  r.qpn = qpn;
  r.service_id = c->service_id;
  r.qkey = qkey;
  std::copy(private_data.begin(), private_data.end(), r.private_data.begin());
  send(*c, r, now, false);  // kept: a repeated SIDR_REQ gets it again (on_sidr_req)
  enter_timewait(*c, now);
  return Status::ok();
}

Status Manager::cancel(uint32_t conn, Timestamp now) {
  Conn* c = find(conn);
  if (!c) return Status::invalid();
  switch (c->state) {
    case State::kReqSent:
    case State::kRepSent:
      send_once(c->peer, c->tid,
                rej_of(*c, w::RejReason::kTimeout,
                       c->state == State::kReqSent ? w::MsgRef::kReq : w::MsgRef::kRep));
      enter_timewait(*c, now);
      return Status::ok();
    case State::kReqRcvd:
    case State::kRepRcvd: return reject(conn, {}, now);
    case State::kEstablished: return disconnect(conn, now);
    case State::kSidrRcvd:
      return sidr_reply(conn, static_cast<uint8_t>(w::SidrStatus::kRejected), 0, 0, {}, now);
    case State::kSidrSent: enter_timewait(*c, now); return Status::ok();
    case State::kDreqSent:
    case State::kTimewait: return Status::ok();
  }
  return Status::ok();
}

void Manager::on_sidr_req(const Gid& src, uint64_t tid, const w::SidrReq& m, Timestamp now) {
  if (Conn* c = find_remote(src, m.request_id); c && c->service_id == m.service_id) {
    ++counters_.duplicate_req;
    if (c->state == State::kTimewait) {  // our reply was lost: the same one again
      ++counters_.resent;
      send_(c->peer, c->last);
    }
    return;
  }
  if (!listening(m.service_id)) {
    ++counters_.rejected_no_listener;
    if (cfg_.shared) return;
    w::SidrRep r;
    r.request_id = m.request_id;
    r.status = static_cast<uint8_t>(w::SidrStatus::kServiceIdNotSupported);
    r.service_id = m.service_id;
    send_once(src, tid, r);
    return;
  }
  Conn& c = new_conn(State::kSidrRcvd, src);
  c.remote_id = m.request_id;
  c.service_id = m.service_id;
  c.tid = tid;
  // The application answers; should it never, the request is forgotten after timewait.
  c.deadline = now + cfg_.timewait;
  Event e = event_of(EventType::kSidrRequest, c);
  e.sidr_req = m;
  emit(std::move(e));
}

void Manager::on_sidr_rep(uint64_t tid, const w::SidrRep& m, Timestamp now) {
  Conn* c = find(m.request_id);
  if (!c || c->state != State::kSidrSent || tid != c->tid) {
    ++counters_.unknown_conn;
    return;
  }
  Event e = event_of(EventType::kSidrReply, *c);
  e.sidr_rep = m;
  emit(std::move(e));
  enter_timewait(*c, now);
}

void Manager::on_timer(Timestamp now) {
  for (auto it = conns_.begin(); it != conns_.end();) {
    Conn& c = it->second;
    if (c.deadline > now) {
      ++it;
      continue;
    }
    if (c.state == State::kTimewait || c.state == State::kSidrRcvd) {
      it = conns_.erase(it);
      continue;
    }
    if (c.retries_left > 0) {
      --c.retries_left;
      ++counters_.resent;
      send_(c.peer, c.last);
      c.deadline = now + cfg_.response_timeout;
      ++it;
      continue;
    }
    const bool dreq = c.state == State::kDreqSent;
    Event e = event_of(dreq ? EventType::kDisconnected : EventType::kTimeout, c);
    if (!dreq && c.state != State::kSidrSent) {  // REQ/REP unanswered: tell the peer (12.9.6)
      send_once(c.peer, c.tid,
                rej_of(c, w::RejReason::kTimeout,
                       c.state == State::kReqSent ? w::MsgRef::kReq : w::MsgRef::kRep));
    }
    emit(std::move(e));
    enter_timewait(c, now);
    ++it;
  }
}

Timestamp Manager::next_deadline() const {
  Timestamp t = Timestamp::never();
  for (const auto& [id, c] : conns_) t = earliest(t, c.deadline);
  return t;
}

std::optional<Event> Manager::poll_event() {
  if (events_.empty()) return std::nullopt;
  Event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

}  // namespace uroce::cm
