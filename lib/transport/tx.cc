/**
 * @file tx.cc
 * @brief Transmission: the poll_transmit scheduler, the requester's WQE-to-packet
 * segmentation (IBA Vol 1 §9.7.4 "Requester side"), responses (ACK/NAK, read responses,
 * atomic ACKs), CNPs, timers and next_deadline().
 *
 * Scheduling: QPs with work or timers sit in `active`; poll_transmit fires due timers, then
 * serves the QPs round-robin, up to kBurst frames each per round, responses before CNPs before
 * new requests, until the sink refuses a frame or nothing is ready. Requests pass the QP's
 * congestion-control send-time gate; responses do not. Frames: Ethernet + IPv4 or IPv6 (by
 * the AV's GID type) + UDP 4791 (source port per QP) + BTH..., DSCP from the AV's traffic
 * class or the device's roce_dscp, ECT(0) when EngineConfig::ecn. Units: bytes, ns.
 */
#include <algorithm>
#include <cstring>

#include "transport/engine_impl.h"

namespace uroce::transport {

using wire::Opcode;

namespace {
constexpr uint32_t kBurst = 16;

uint32_t pkts_for(uint32_t len, uint32_t mtu) { return len == 0 ? 1 : (len + mtu - 1) / mtu; }

/// UC opcodes are the RC ones + 0x20 (IBA 9.2.1 Table 37).
Opcode for_type(QpType t, Opcode rc) {
  return t == QpType::kUc ? static_cast<Opcode>(static_cast<uint8_t>(rc) + 0x20) : rc;
}

/// SEND/WRITE opcode for one packet.
Opcode data_opcode(WrOpcode op, bool first, bool last) {
  const bool only = first && last;
  switch (op) {
    case WrOpcode::kSend:
      return only    ? Opcode::kRcSendOnly
             : first ? Opcode::kRcSendFirst
             : last  ? Opcode::kRcSendLast
                     : Opcode::kRcSendMiddle;
    case WrOpcode::kSendWithImm:
      return only    ? Opcode::kRcSendOnlyWithImmediate
             : first ? Opcode::kRcSendFirst
             : last  ? Opcode::kRcSendLastWithImmediate
                     : Opcode::kRcSendMiddle;
    case WrOpcode::kSendWithInv:
      return only    ? Opcode::kRcSendOnlyWithInvalidate
             : first ? Opcode::kRcSendFirst
             : last  ? Opcode::kRcSendLastWithInvalidate
                     : Opcode::kRcSendMiddle;
    case WrOpcode::kRdmaWrite:
      return only    ? Opcode::kRcRdmaWriteOnly
             : first ? Opcode::kRcRdmaWriteFirst
             : last  ? Opcode::kRcRdmaWriteLast
                     : Opcode::kRcRdmaWriteMiddle;
    case WrOpcode::kRdmaWriteWithImm:
      return only    ? Opcode::kRcRdmaWriteOnlyWithImmediate
             : first ? Opcode::kRcRdmaWriteFirst
             : last  ? Opcode::kRcRdmaWriteLastWithImmediate
                     : Opcode::kRcRdmaWriteMiddle;
    default: return Opcode::kRcSendOnly;
  }
}

uint8_t dscp_of(const EngineConfig& cfg, const AddressVector& av) {
  return av.traffic_class ? static_cast<uint8_t>(av.traffic_class >> 2) : cfg.roce_dscp;
}
}  // namespace

void Engine::Impl::fill_template(Qp& qp) {
  wire::FrameSpec& s = qp.tmpl;
  s = wire::FrameSpec{};
  const AddressVector& av = qp.attr.av;
  s.src_mac = cfg.mac;
  s.dst_mac = qp.dmac;
  if (av.sgid_index < cfg.gids.size()) s.src_ip = cfg.gids[av.sgid_index];
  s.dst_ip = av.dgid;
  s.dscp = dscp_of(cfg, av);
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

bool Engine::Impl::requester_has_packet(const Qp& qp) const {
  if (qp.state != QpState::kRts && qp.state != QpState::kSqd) return false;
  if (qp.send_pos == qp.sq.tail_pos()) return false;
  const SendWqe& w = qp.sq.at_pos(qp.send_pos);
  if (w.local_error != WcStatus::kSuccess) return qp.send_pos == qp.sq.head_pos();
  if (!w.started) {
    if (qp.state == QpState::kSqd) return false;
    if (qp.type == QpType::kRc) {
      const uint32_t limit = std::max<uint32_t>(qp.attr.max_rd_atomic, 1);
      if (is_rd_atomic(w) && qp.rd_atomic_out >= limit) return false;
      // Fence (IBA 10.8.3.3): wait for every earlier READ/atomic to complete.
      if ((w.flags & kSendFence) && qp.rd_atomic_out > 0) return false;
    }
  }
  if (qp.type == QpType::kRc &&
      diff(qp.next_psn, qp.una) >= static_cast<int32_t>(cfg.max_unacked_psns))
    return false;
  return true;
}

Timestamp Engine::Impl::qp_tx_time(const Qp& qp) const {
  if (!qp.resp_q.empty() || qp.cnp_pending) return last_now;
  if (!requester_has_packet(qp)) return Timestamp::never();
  Timestamp t = last_now;
  if (!qp.rnr_until.is_never()) t = std::max(t, qp.rnr_until);
  if (!qp.neigh_retry_at.is_never()) t = std::max(t, qp.neigh_retry_at);
  t = std::max(t, qp.cc->next_send_time(qp.mtu + 80, last_now));
  return t;
}

Timestamp Engine::Impl::qp_timer_time(const Qp& qp) const {
  return std::min({qp.retrans_at, qp.probe_at, qp.dack_at, qp.cc->next_deadline()});
}

Timestamp Engine::Impl::next_deadline() const {
  Timestamp t = np ? np->next_deadline() : Timestamp::never();
  for (const Qp* qp : active) {
    t = std::min(t, qp_tx_time(*qp));
    t = std::min(t, qp_timer_time(*qp));
  }
  return t;
}

// ---- Responder output --------------------------------------------------------------------------

int Engine::Impl::service_responder(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp) {
  if (!resolve(qp, neigh)) {
    // No MAC for the peer: the responses are lost; the requester's timer recovers.
    inc(Counter::tx_no_neighbor);
    qp.resp_q.clear();
    qp.resp_rd_atomic = 0;
    return 0;
  }
  RespItem& it = qp.resp_q.front();
  wire::FrameSpec s = qp.tmpl;
  const uint8_t prio = prio_of(s.dscp);
  s.aeth.msn = it.msn;
  auto none = [](uint8_t*) { return true; };
  int r;
  switch (it.kind) {
    case RespItem::Kind::kAck:
    case RespItem::Kind::kNak: {
      s.opcode = Opcode::kRcAcknowledge;
      s.psn = it.psn;
      s.aeth.syndrome = it.syndrome;
      r = emit(sink, qp, s, 0, prio, false, none);
      if (r > 0) qp.resp_q.pop();
      return r > 0 ? 1 : r;
    }
    case RespItem::Kind::kAtomic: {
      s.opcode = Opcode::kRcAtomicAcknowledge;
      s.psn = it.psn;
      s.aeth.syndrome = kSynAck;
      s.atomic_ack_orig = it.orig;
      r = emit(sink, qp, s, 0, prio, false, none);
      if (r > 0) {
        qp.resp_q.pop();
        qp.resp_rd_atomic--;
      }
      return r > 0 ? 1 : r;
    }
    case RespItem::Kind::kRead: {
      const uint32_t idx = it.sent;
      const uint32_t off = idx * qp.mtu;
      const uint32_t chunk = std::min(qp.mtu, it.len - std::min(it.len, off));
      const bool first = idx == 0, last = idx + 1 == it.npkts;
      s.opcode = first && last ? Opcode::kRcRdmaReadResponseOnly
                 : first       ? Opcode::kRcRdmaReadResponseFirst
                 : last        ? Opcode::kRcRdmaReadResponseLast
                               : Opcode::kRcRdmaReadResponseMiddle;
      s.psn = it.psn + idx;
      s.aeth.syndrome = kSynAck;
      // The region may have gone since the request was checked: check again per packet.
      if (chunk && mrs.check_remote(it.rkey, qp.init.pd, it.va + off, chunk, kAccessRemoteRead) !=
                       AccessCheck::kOk) {
        responder_fatal(qp, wire::kAethNakRemoteAccessError, AsyncEventType::kQpAccessErr,
                        WcStatus::kSuccess);
        return 0;
      }
      const uint64_t src = it.va + off;
      r = emit(sink, qp, s, chunk, prio, false, [&](uint8_t* dst) {
        if (chunk) std::memcpy(dst, reinterpret_cast<const void*>(src), chunk);
        return true;
      });
      if (r > 0 && ++it.sent == it.npkts) {
        qp.resp_q.pop();
        qp.resp_rd_atomic--;
      }
      return r > 0 ? 1 : r;
    }
  }
  return 0;
}

int Engine::Impl::send_cnp(Qp& qp, TxSink& sink) {
  wire::FrameSpec s;
  s.src_mac = cfg.mac;
  s.dst_mac = qp.cnp_dmac;
  s.dst_ip = qp.cnp_dip;
  for (const Gid& g : cfg.gids) {
    if (!g.is_zero() && g.is_ipv4_mapped() == qp.cnp_dip.is_ipv4_mapped()) {
      s.src_ip = g;
      break;
    }
  }
  s.dscp = cfg.cnp_dscp;
  tag(s);
  s.ecn = wire::kEcnNotEct;
  s.udp_sport = qp.udp_sport;
  s.dest_qpn = Qpn(qp.cnp_dqpn);
  constexpr size_t kMax = wire::kMaxFrameOverhead + 16;
  uint8_t* buf = sink.begin_frame(kMax);
  if (!buf) return -1;
  size_t len = wire::build_cnp(s, std::span<uint8_t>(buf, kMax));
  qp.cnp_pending = false;
  if (len == 0) return 0;
  TxMeta meta;
  meta.priority = prio_of(cfg.cnp_dscp);
  meta.is_cnp = true;
  sink.end_frame(len, meta);
  inc(Counter::np_cnp_sent);
  qp.traffic.np_cnp_sent++;
  count_tx(qp, len);
  return 1;
}

// ---- Requester -------------------------------------------------------------------------------

bool Engine::Impl::wants_ackreq(const Qp& qp, const SendWqe& w, bool last, uint32_t pos,
                                Timestamp now) const {
  if (qp.force_ackreq || qp.pkts_since_ackreq + 1 >= kAckReqInterval) return true;
  const Duration timeout = local_ack_timeout(qp.attr.timeout);
  if ((now - qp.last_ackreq).ns >= timeout.ns / kAckReqTimeDivisor) return true;
  if (!last) return false;
  if (w.signaled) return true;
  if (pos + 1 != qp.sq.tail_pos()) return false;  // the next message follows right away
  if (timeout.ns <= 4 * kAckProbeDelay.ns) return true;
  const bool gap = now - qp.last_sent >= kAckReqStreamGap;
  return gap || qp.burst_pkts < kAckReqInterval;  // not (yet) a stream: ask every time
}

int Engine::Impl::service_requester(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now) {
  const uint32_t pos = qp.send_pos;
  SendWqe& w = qp.sq.at_pos(pos);
  if (w.local_error != WcStatus::kSuccess) {
    check_head_error(qp);
    return 0;
  }
  // Local checks before the first packet (C10-? errors are reported at the head, in order).
  if (!w.started) {
    WcStatus err = WcStatus::kSuccess;
    if (qp.type == QpType::kUd && w.length > qp.mtu) err = WcStatus::kLocLenErr;
    if (is_rd_atomic(w) &&
        check_scatter(sq_sg(qp, pos), w.num_sge, qp.init.pd, 0, w.length) != AccessCheck::kOk)
      err = WcStatus::kLocProtErr;
    if (err != WcStatus::kSuccess) {
      w.local_error = err;
      check_head_error(qp);
      return 0;
    }
  }

  wire::FrameSpec s;
  if (qp.type == QpType::kUd) {
    s.src_mac = cfg.mac;
    if (!neigh.resolve(w.av.dgid, &s.dst_mac)) {
      // UD: the datagram is dropped (counted); the WR still completes.
      inc(Counter::tx_no_neighbor);
      w.started = true;
      qp.started_end = pos + 1;
      retire_head(qp, WcStatus::kSuccess);
      return 0;
    }
    s.src_ip = cfg.gids[w.av.sgid_index];
    s.dst_ip = w.av.dgid;
    s.dscp = dscp_of(cfg, w.av);
    tag(s);
    s.ecn = cfg.ecn ? wire::kEcnEct0 : 0;
    s.ttl = w.av.hop_limit;
    if (uint8_t ttl = neigh.hop_limit(w.av.dgid)) s.ttl = ttl;
    s.flow_label = w.av.flow_label;
    s.udp_sport = w.av.udp_sport
                      ? w.av.udp_sport
                      : static_cast<uint16_t>(0xc000 | ((qp.qpn ^ w.remote_qpn) & 0x3fff));
    s.dest_qpn = Qpn(w.remote_qpn);
    // Q_Key: a WR Q_Key with the high bit set means "use the QP's own" (IBA 10.2.5).
    s.deth.qkey = (w.remote_qkey & 0x80000000u) ? qp.attr.qkey : w.remote_qkey;
    s.deth.src_qpn = Qpn(qp.qpn);
  } else {
    if (!resolve(qp, neigh)) {
      inc(Counter::tx_no_neighbor);
      Duration d = qp.attr.timeout ? local_ack_timeout(qp.attr.timeout) : Duration::millis(1);
      qp.neigh_retry_at = now + std::min(d, Duration::millis(100));
      return 0;
    }
    s = qp.tmpl;
  }

  if (!w.started) {
    // A new WQE takes the PSNs after everything ever sent (all earlier WQEs are segmented).
    w.started = true;
    w.npkts = is_rd_atomic(w) && w.opcode != WrOpcode::kRdmaRead ? 1 : pkts_for(w.length, qp.mtu);
    w.first_psn = qp.max_psn;
    w.last_psn = qp.max_psn + (w.npkts - 1);
    w.resp_pkts = 0;
    qp.send_off = 0;
    qp.next_psn = qp.max_psn;
    qp.started_end = pos + 1;
    if (is_rd_atomic(w)) qp.rd_atomic_out++;
  } else {
    // Re-sending (go-back-N): the PSN follows from the WQE and the cursor, never from a
    // running counter, so segmentation is identical to the first transmission.
    uint32_t idx = w.opcode == WrOpcode::kRdmaRead ? qp.send_off
                   : is_rd_atomic(w)               ? 0
                                                   : qp.send_off / qp.mtu;
    qp.next_psn = w.first_psn + idx;
  }

  const Psn psn = qp.next_psn;
  s.psn = psn;
  const uint8_t prio = prio_of(s.dscp);
  uint32_t payload = 0;
  bool last_of_wqe = true;
  Psn after = psn + 1;  // next_psn after this packet
  bool gather_failed = false;
  const Sge* sg = sq_sg(qp, pos);
  auto none = [](uint8_t*) { return true; };
  int r;

  switch (w.opcode) {
    case WrOpcode::kRdmaRead: {
      const uint32_t k = qp.send_off;  // resume point, in response packets
      const uint32_t off = std::min(w.length, k * qp.mtu);
      s.opcode = Opcode::kRcRdmaReadRequest;
      s.reth = {w.remote_addr + off, w.rkey, w.length - off};
      s.psn = w.first_psn + k;
      after = w.last_psn + 1;
      r = emit(sink, qp, s, 0, prio, false, none);
      break;
    }
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd: {
      const bool cas = w.opcode == WrOpcode::kAtomicCmpAndSwp;
      s.opcode = cas ? Opcode::kRcCompareSwap : Opcode::kRcFetchAdd;
      s.atomic_eth = {w.remote_addr, w.rkey, cas ? w.swap : w.compare_add, cas ? w.compare_add : 0};
      r = emit(sink, qp, s, 0, prio, false, none);
      break;
    }
    default: {
      const uint32_t off = qp.send_off;
      const uint32_t chunk = std::min(qp.mtu, w.length - std::min(w.length, off));
      const bool first = off == 0, last = off + chunk >= w.length;
      last_of_wqe = last;
      payload = chunk;
      if (qp.type == QpType::kUd) {
        s.opcode = w.opcode == WrOpcode::kSendWithImm ? Opcode::kUdSendOnlyWithImmediate
                                                      : Opcode::kUdSendOnly;
      } else {
        s.opcode = for_type(qp.type, data_opcode(w.opcode, first, last));
      }
      if (first && (w.opcode == WrOpcode::kRdmaWrite || w.opcode == WrOpcode::kRdmaWriteWithImm))
        s.reth = {w.remote_addr, w.rkey, w.length};
      if (last && (w.opcode == WrOpcode::kSendWithImm || w.opcode == WrOpcode::kRdmaWriteWithImm))
        s.imm = imm_from_net(w.imm);
      if (last && w.opcode == WrOpcode::kSendWithInv) s.ieth_rkey = w.imm;
      s.se = last && (w.flags & kSendSolicited);
      if (qp.type == QpType::kRc) s.ackreq = wants_ackreq(qp, w, last, pos, now);
      const uint8_t* inl = w.inline_data ? sq_inl(qp, pos) + off : nullptr;
      r = emit(sink, qp, s, chunk, prio, false, [&](uint8_t* dst) {
        if (chunk == 0) return true;
        if (inl) {
          std::memcpy(dst, inl, chunk);
          return true;
        }
        if (gather(sg, w.num_sge, qp.init.pd, off, dst, chunk) != AccessCheck::kOk) {
          gather_failed = true;
          return false;
        }
        return true;
      });
      break;
    }
  }
  if (gather_failed) {
    // Local protection error (bad lkey, bounds, deregistered MR): reported at the head.
    w.local_error = WcStatus::kLocProtErr;
    check_head_error(qp);
    return 0;
  }
  if (r <= 0) return r;

  // Sent.
  if (qp.force_ackreq) {
    qp.force_ackreq = false;  // the ACK probe: a duplicate by design, not a retransmission
  } else if (diff(s.psn, qp.max_psn) < 0) {
    inc(Counter::roce_adp_retrans);
    qp.traffic.retransmits++;
  }
  if (diff(after, qp.max_psn) > 0) qp.max_psn = after;
  qp.next_psn = after;
  qp.cc->on_packet_sent(static_cast<uint32_t>(r), now);
  qp.pkts_since_ackreq = s.ackreq ? 0 : qp.pkts_since_ackreq + 1;
  if (s.ackreq) qp.last_ackreq = now;
  qp.burst_pkts = now - qp.last_sent >= kAckReqStreamGap ? 1 : qp.burst_pkts + 1;
  qp.last_sent = now;
  // READ and atomic requests draw responses that acknowledge everything before them.
  const bool unasked = qp.type == QpType::kRc && !s.ackreq && !is_rd_atomic(w);
  qp.probe_at = unasked ? now + kAckProbeDelay : Timestamp::never();
  if (last_of_wqe) {
    qp.send_pos = pos + 1;
    qp.send_off = 0;
  } else {
    qp.send_off += payload;
  }
  if (qp.type == QpType::kRc) {
    if (qp.retrans_at.is_never()) qp.retrans_at = now + local_ack_timeout(qp.attr.timeout);
  } else if (last_of_wqe) {
    // UC/UD: the WR is complete once its last packet is on the wire.
    qp.una = qp.next_psn;
    retire_head(qp, WcStatus::kSuccess);
  }
  return 1;
}

// ---- Scheduler -------------------------------------------------------------------------------

size_t Engine::Impl::poll_transmit(TxSink& sink, NeighborResolver& neigh, Timestamp now) {
  if (now > last_now) last_now = now;
  for (size_t i = 0; i < active.size(); ++i) on_timers(*active[i], now);
  if (np && np->next_deadline() <= now) {
    // Coalesced CNPs: CE packets inside min_time_between_cnps send one when it ends.
    np_due.clear();
    np->on_timer(now, &np_due);
    for (uint32_t qpn : np_due)
      if (Qp* qp = find_qp(qpn);
          qp && qp->cnp_target && qp->state != QpState::kReset && qp->state != QpState::kErr) {
        qp->cnp_pending = true;
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
        if (!qp.resp_q.empty()) r = service_responder(qp, sink, neigh, now);
        if (r == 0 && qp.cnp_pending) r = send_cnp(qp, sink);
        if (r == 0 && requester_has_packet(qp) && qp.rnr_until.is_never() &&
            qp.neigh_retry_at.is_never() && qp.cc->next_send_time(qp.mtu + 80, now) <= now)
          r = service_requester(qp, sink, neigh, now);
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
