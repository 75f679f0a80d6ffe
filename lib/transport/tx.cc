/**
 * @file tx.cc
 * @brief Transmission scheduling: poll_transmit (timers of every role and of moderated CQ
 * events, then the QPs' responses, CNPs and requests), next_deadline(), the per-QP frame template
 * and neighbour resolution, the timers of each role. The frames themselves are built by the roles:
 * responder_tx.cc, notification.cc, requester.cc.
 *
 * Scheduling: QPs with work or timers sit in `active`; poll_transmit fires due timers, then
 * serves the QPs round-robin, up to kBurst frames each per round, responses before CNPs before
 * new requests, until the sink refuses a frame or nothing is ready. Requests and READ
 * responses pass the QP's congestion-control send-time gate (the QP's rate covers all the data
 * it sends, as a NIC's per-QP rate limiter does: for a READ the responder is the data sender,
 * and the CNPs for its responses come to it); ACKs, NAKs and atomic responses do not. Frames:
 * Ethernet + IPv4 or IPv6 (by the AV's GID type) + UDP 4791 (source port per QP) + BTH..., DSCP
 * from the AV's traffic class or the device's roce_dscp, ECT(0) when EngineConfig::ecn. Units:
 * bytes, ns.
 */
#include <algorithm>
#include <cstring>

#include "transport/engine_impl.h"

namespace uroce::transport {

using wire::Opcode;

namespace {
constexpr uint32_t kBurst = 16;
}  // namespace

void Engine::Impl::fill_template(Qp& qp) {
  wire::FrameSpec& s = qp.tmpl;
  s = wire::FrameSpec{};
  const AddressVector& av = qp.attr.av;
  s.src_mac = cfg.mac;
  s.dst_mac = qp.dmac;
  if (av.sgid_index < cfg.gids.size()) s.src_ip = cfg.gids[av.sgid_index];
  s.roce_v1 = roce_v1_gid(av.sgid_index);
  s.dst_ip = av.dgid;
  s.dscp = dscp_of(av);
  tag(s);
  s.ecn = cfg.ecn ? wire::kEcnEct0 : 0;
  s.ttl = av.hop_limit;
  s.flow_label = av.flow_label;
  s.udp_sport = qp.udp_sport;
  s.pkey = wire::kDefaultPkey;
  s.dest_qpn = Qpn(qp.attr.dest_qp_num);
}

bool Engine::Impl::resolve(Qp& qp, NeighborResolver& neigh) {
  if (qp.dmac_valid) return true;
  if (!neigh.resolve(qp.attr.av.dgid, &qp.dmac)) return false;
  qp.dmac_valid = true;
  if (uint8_t ttl = neigh.hop_limit(qp.attr.av.dgid)) qp.tmpl.ttl = ttl;
  qp.tmpl.dst_mac = qp.dmac;
  return true;
}

// ---- Readiness --------------------------------------------------------------------------------

bool Engine::Impl::responder_paced(const Qp& qp) const {
  return qp.resp.resp_q.front().kind == RespItem::Kind::kRead;
}

Timestamp Engine::Impl::qp_tx_time(const Qp& qp) const {
  if (qp.cnp.cnp_pending) return last_now;
  Timestamp resp = Timestamp::never();
  if (!qp.resp.resp_q.empty()) {
    if (!responder_paced(qp)) return last_now;
    resp = std::max(last_now, qp.cc->next_send_time(qp.mtu + 80, last_now));
  }
  if (!requester_ready(qp)) return resp;
  Timestamp t = last_now;
  if (!qp.req.rnr_until.is_never()) t = std::max(t, qp.req.rnr_until);
  if (!qp.req.neigh_retry_at.is_never()) t = std::max(t, qp.req.neigh_retry_at);
  t = std::max(t, qp.cc->next_send_time(qp.mtu + 80, last_now));
  return std::min(t, resp);
}

Timestamp Engine::Impl::qp_timer_time(const Qp& qp) const {
  return std::min({qp.comp.retrans_at, qp.req.probe_at, qp.resp.dack_at, qp.req.sr.rto_at,
                   qp.cc->next_deadline()});
}

Timestamp Engine::Impl::next_deadline() const {
  Timestamp t = np ? np->next_deadline() : Timestamp::never();
  if (!cq_mod_waiting.empty()) t = std::min(t, cq_mod_deadline());
  for (const Qp* qp : active) {
    t = std::min(t, qp_tx_time(*qp));
    t = std::min(t, qp_timer_time(*qp));
  }
  return t;
}

void Engine::Impl::on_timers(Qp& qp, Timestamp now) {
  completer_timers(qp, now);
  requester_timers(qp, now);
  responder_timers(qp, now);
  if (qp.cc->next_deadline() <= now) qp.cc->on_timer(now);
}

// ---- Scheduler -------------------------------------------------------------------------------

size_t Engine::Impl::poll_transmit(TxSink& sink, NeighborResolver& neigh, Timestamp now) {
  if (now > last_now) last_now = now;
  if (!cq_mod_waiting.empty()) cq_mod_timers(now);
  for (size_t i = 0; i < active.size(); ++i) on_timers(*active[i], now);
  if (np && np->next_deadline() <= now) {
    // Coalesced CNPs: CE packets inside min_time_between_cnps send one when it ends.
    np_due.clear();
    np->on_timer(now, &np_due);
    for (uint32_t qpn : np_due)
      if (Qp* qp = find_qp(qpn);
          qp && qp->cnp.cnp_target && qp->state != QpState::kReset && qp->state != QpState::kErr) {
        qp->cnp.cnp_pending = true;
        activate(*qp);
      }
  }
  size_t sent = 0;
  bool full = false, any = true;
  while (any && !full) {
    any = false;
    const size_t n = active.size();
    for (size_t k = 0; k < n && !full; ++k) {
      Qp& qp = *active[(rr + k) % n];
      for (uint32_t b = 0; b < kBurst; ++b) {
        int r = 0;
        if (!qp.resp.resp_q.empty() &&
            (!responder_paced(qp) || qp.cc->next_send_time(qp.mtu + 80, now) <= now))
          r = service_responder(qp, sink, neigh, now);
        if (r == 0 && qp.cnp.cnp_pending) r = send_cnp(qp, sink);
        if (r == 0 && requester_ready(qp) && qp.req.rnr_until.is_never() &&
            qp.req.neigh_retry_at.is_never() && qp.cc->next_send_time(qp.mtu + 80, now) <= now)
          r = service_requester_any(qp, sink, neigh, now);
        if (r < 0) {
          full = true;
          break;
        }
        if (r == 0) break;
        ++sent;
        any = true;
      }
    }
    ++rr;
  }
  // Drop QPs with nothing to do and no timer from the active list.
  if (!full) {
    std::erase_if(active, [&](Qp* qp) {
      if (!qp_tx_time(*qp).is_never() || !qp_timer_time(*qp).is_never()) return false;
      qp->in_active = false;
      return true;
    });
  }
  return sent;
}

}  // namespace uroce::transport
