/**
 * @file requester.cc
 * @brief The requester: when a QP may send a request packet (max_rd_atomic, fences, the
 * window of unacknowledged PSNs), the segmentation of send WQEs into request packets (IBA
 * Vol 1 §9.7.4 "Requester side"), first transmission and go-back-N resend from the cursor that
 * the completer rewinds, and the AckReq policy (kAckReqInterval, kAckReqStreamGap, the ACK
 * probe). UC and UD requests too: their WQEs complete when the last packet is on the wire.
 */
#include <algorithm>
#include <cstring>

#include "common/port.h"
#include "transport/engine_impl.h"

namespace uroce::transport {

using wire::Opcode;

namespace {

/// Peer timestamps: a TSETH with the clock now on a request packet, when the frame stays within
/// what a full path MTU with the longest IBA headers takes (kRoceHeaderRoom after the BTH), so a
/// netdev that carries the path MTU carries it.
void stamp(wire::FrameSpec& s, uint32_t payload, uint32_t path_mtu, Timestamp now) {
  const size_t after_bth = wire::opcode_info(s.opcode).length - sizeof(wire::Bth) +
                           wire::ext_len(s.ext, s.sack) + wire::kTsethRequestLen + payload;
  if (after_bth > path_mtu + kRoceHeaderRoom) return;
  s.has_tseth = true;
  s.tseth.stamp = static_cast<uint32_t>(now.ns);
}

/// UC opcodes are the RC ones + 0x20, XRC ones the RC ones | 0xa0 (IBA 9.2.1 Table 37).
Opcode for_type(QpType t, Opcode rc) {
  return t == QpType::kUc        ? static_cast<Opcode>(static_cast<uint8_t>(rc) + 0x20)
         : t == QpType::kXrcSend ? wire::xrc_twin(rc)
                                 : rc;
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

}  // namespace

bool Engine::Impl::requester_has_packet(const Qp& qp) const {
  if (qp.state != QpState::kRts && qp.state != QpState::kSqd) return false;
  if (qp.req.send_pos == qp.req.sq.tail_pos()) return false;
  const SendWqe& w = qp.req.sq.at_pos(qp.req.send_pos);
  if (w.local_error != WcStatus::kSuccess) return qp.req.send_pos == qp.req.sq.head_pos();
  // A local operation runs once every earlier WR has completed (ordering, IBA §10.8.3).
  if (is_local_op(w)) return qp.state == QpState::kRts && qp.req.send_pos == qp.req.sq.head_pos();
  if (!w.started) {
    if (qp.state == QpState::kSqd) return false;
    if (is_reliable(qp.type)) {
      const uint32_t limit = std::max<uint32_t>(qp.attr.max_rd_atomic, 1);
      if (is_rd_atomic(w) && qp.req.rd_atomic_out >= limit) return false;
      // Fence (IBA 10.8.3.3): wait for every earlier READ/atomic to complete.
      if ((w.flags & kSendFence) && qp.req.rd_atomic_out > 0) return false;
    }
  }
  if (qp.selective) {
    // New packets (the cursor at max_psn): within the tracked window and the in-flight cap.
    if (qp.req.next_psn != qp.req.max_psn) return true;
    const int32_t room =
        static_cast<int32_t>(cfg.sr_window) - 1 - diff(qp.req.max_psn, qp.comp.una);
    if (w.opcode == WrOpcode::kRdmaRead) {
      // A READ (or its next part) once a useful part fits and max_rd_atomic allows.
      const uint32_t left = w.started ? w.npkts - qp.req.send_off : packets_for(w.length, qp.mtu);
      if (room < static_cast<int32_t>(std::min(left, cfg.sr_window / 4))) return false;
      if (sr_reads_full(qp)) return false;
    }
    return room > 0 && sr_in_flight(qp) < sr_cap(qp);
  }
  if (is_reliable(qp.type) &&
      diff(qp.req.next_psn, qp.comp.una) >= static_cast<int32_t>(cfg.max_unacked_psns))
    return false;
  return true;
}

bool Engine::Impl::requester_ready(const Qp& qp) const {
  if (qp.selective && qp.req.sr.has_hole &&
      (qp.state == QpState::kRts || qp.state == QpState::kSqd))
    return !qp.req.sr.hole_read || !sr_reads_full(qp);
  return requester_has_packet(qp);
}

int Engine::Impl::service_requester_any(Qp& qp, TxSink& sink, NeighborResolver& neigh,
                                        Timestamp now) {
  if (qp.selective && qp.req.sr.has_hole &&
      (qp.state == QpState::kRts || qp.state == QpState::kSqd))
    return sr_resend(qp, sink, neigh, now);
  return service_requester(qp, sink, neigh, now);
}

bool Engine::Impl::wants_ackreq(const Qp& qp, const SendWqe& w, bool last, uint32_t pos,
                                Timestamp now) const {
  if (qp.req.force_ackreq || qp.req.pkts_since_ackreq + 1 >= kAckReqInterval) return true;
  const Duration timeout = local_ack_timeout(qp.attr.timeout);
  if ((now - qp.req.last_ackreq).ns >= timeout.ns / kAckReqTimeDivisor) return true;
  if (!last) return false;
  if (w.signaled) return true;
  if (pos + 1 != qp.req.sq.tail_pos()) return false;  // the next message follows right away
  if (timeout.ns <= 4 * kAckProbeDelay.ns) return true;
  const bool gap = now - qp.req.last_sent >= kAckReqStreamGap;
  return gap || qp.req.burst_pkts < kAckReqInterval;  // not (yet) a stream: ask every time
}

int Engine::Impl::service_requester(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now) {
  // Local operations at the head run here, then the first WR with packets goes on.
  for (;;) {
    SendWqe& h = qp.req.sq.at_pos(qp.req.send_pos);
    if (!is_local_op(h) || h.local_error != WcStatus::kSuccess) break;
    if (qp.req.send_pos != qp.req.sq.head_pos()) return 0;
    const WcStatus st = run_local_op(qp, h);
    if (st != WcStatus::kSuccess) {
      h.local_error = st;  // the QP goes to the error state, as for any local error
      check_head_error(qp);
      return 0;
    }
    retire_head(qp, WcStatus::kSuccess);
    if (!requester_has_packet(qp)) return 0;
  }
  const uint32_t pos = qp.req.send_pos;
  SendWqe& w = qp.req.sq.at_pos(pos);
  if (w.local_error != WcStatus::kSuccess) {
    check_head_error(qp);
    return 0;
  }
  // Local checks before the first packet (C10-? errors are reported at the head, in order).
  if (!w.started) {
    WcStatus err = WcStatus::kSuccess;
    if (qp.type == QpType::kUd && w.length > qp.mtu) err = WcStatus::kLocLenErr;
    if (scatters_response(w) &&
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
      qp.req.started_end = pos + 1;
      retire_head(qp, WcStatus::kSuccess);
      return 0;
    }
    s.src_ip = cfg.gids[w.av.sgid_index];
    s.roce_v1 = roce_v1_gid(w.av.sgid_index);
    s.dst_ip = w.av.dgid;
    s.dscp = dscp_of(w.av);
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
      qp.req.neigh_retry_at = now + std::min(d, Duration::millis(100));
      return 0;
    }
    s = qp.tmpl;
  }

  if (!w.started) {
    // A new WQE takes the PSNs after everything ever sent (all earlier WQEs are segmented).
    w.started = true;
    w.npkts =
        is_rd_atomic(w) && w.opcode != WrOpcode::kRdmaRead ? 1 : packets_for(w.length, qp.mtu);
    w.first_psn = qp.req.max_psn;
    w.last_psn = qp.req.max_psn + (w.npkts - 1);
    w.resp_pkts = 0;
    qp.req.send_off = 0;
    qp.req.next_psn = qp.req.max_psn;
    qp.req.started_end = pos + 1;
    if (is_rd_atomic(w)) qp.req.rd_atomic_out++;
    const bool rwqe = w.opcode == WrOpcode::kSend || w.opcode == WrOpcode::kSendWithImm ||
                      w.opcode == WrOpcode::kSendWithInv || w.opcode == WrOpcode::kRdmaWriteWithImm;
    w.recv_seq = rwqe ? qp.req.sr.recv_seq++ : qp.req.sr.recv_seq;
  } else {
    // Re-sending (go-back-N): the PSN follows from the WQE and the cursor, never from a
    // running counter, so segmentation is identical to the first transmission.
    uint32_t idx = w.opcode == WrOpcode::kRdmaRead ? qp.req.send_off
                   : is_rd_atomic(w)               ? 0
                                                   : qp.req.send_off / qp.mtu;
    qp.req.next_psn = w.first_psn + idx;
  }

  const Psn psn = qp.req.next_psn;
  s.psn = psn;
  s.xrc_srqn = w.remote_qpn;  // XRC_SEND: every request packet names the remote XRC SRQ
  const uint8_t prio = prio_of(s.dscp);
  uint32_t payload = 0;
  bool last_of_wqe = true;
  Psn after = psn + 1;     // next_psn after this packet
  uint32_t read_next = 0;  // a READ asked for in parts: the next part's first packet
  bool gather_failed = false;
  const Sge* sg = sq_sg(qp, pos);
  auto none = [](uint8_t*) { return true; };
  int r;

  switch (w.opcode) {
    case WrOpcode::kRdmaRead: {
      const uint32_t k = qp.req.send_off;  // resume point, in response packets
      const uint32_t off = std::min(w.length, k * qp.mtu);
      s.opcode = for_type(qp.type, Opcode::kRcRdmaReadRequest);
      s.psn = w.first_psn + k;
      uint32_t run = w.npkts - k;
      if (qp.selective) {
        // Up to the next response already held, within the window, and a resend only over
        // PSNs asked for before.
        const int32_t room = static_cast<int32_t>(cfg.sr_window) - 1 - diff(s.psn, qp.comp.una);
        run = std::min<uint32_t>(run, static_cast<uint32_t>(std::max(room, 1)));
        if (diff(s.psn, qp.req.max_psn) < 0)
          run = std::min<uint32_t>(run, static_cast<uint32_t>(diff(qp.req.max_psn, s.psn)));
        uint32_t n = 1;
        while (n < run && !sack_held(qp, s.psn + n)) ++n;
        run = n;
      }
      s.reth = {w.remote_addr + off, w.rkey, std::min(w.length - off, run * qp.mtu)};
      after = s.psn + run;
      last_of_wqe = after == w.last_psn + 1;
      read_next = k + run;
      r = emit(sink, qp, s, 0, prio, false, none);
      break;
    }
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd: {
      const bool cas = w.opcode == WrOpcode::kAtomicCmpAndSwp;
      s.opcode = for_type(qp.type, cas ? Opcode::kRcCompareSwap : Opcode::kRcFetchAdd);
      s.atomic_eth = {w.remote_addr, w.rkey, cas ? w.swap : w.compare_add, cas ? w.compare_add : 0};
      r = emit(sink, qp, s, 0, prio, false, none);
      break;
    }
    case WrOpcode::kAtomicWrite: {
      // IBA 1.5 Annex A19: RETH (length 8) and the 8 bytes, written at once by the responder.
      s.opcode = Opcode::kRcAtomicWrite;
      s.reth = {w.remote_addr, w.rkey, 8};
      const uint64_t value = w.compare_add;
      r = emit(sink, qp, s, 8, prio, false, [&](uint8_t* dst) {
        std::memcpy(dst, &value, 8);
        return true;
      });
      break;
    }
    case WrOpcode::kFlush: {
      // IBA 1.5 Annex A19: FETH (placement type, selectivity level) and RETH (the range).
      s.opcode = Opcode::kRcFlush;
      s.feth = {static_cast<uint8_t>(w.imm & wire::kFethPlacementMask),
                static_cast<uint8_t>(w.imm >> wire::kFethSelectivityShift)};
      s.reth = {w.remote_addr, w.rkey, w.length};
      r = emit(sink, qp, s, 0, prio, false, none);
      break;
    }
    default: {
      const uint32_t off = qp.req.send_off;
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
      if (qp.selective) {
        const bool write =
            w.opcode == WrOpcode::kRdmaWrite || w.opcode == WrOpcode::kRdmaWriteWithImm;
        s.ext = wire::UroceExt::kSreth;
        s.sreth = {w.recv_seq, write ? w.rkey : 0u, write ? w.remote_addr + off : uint64_t{off}};
      }
      if (is_reliable(qp.type)) s.ackreq = wants_ackreq(qp, w, last, pos, now);
      if (s.ackreq && qp.timestamps) stamp(s, chunk, qp.mtu, now);
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
  if (is_reliable(qp.type))
    rtt_on_sent(qp, w, s.psn, diff(s.psn, qp.req.max_psn) >= 0, s.ackreq || is_rd_atomic(w), now);
  if (qp.req.force_ackreq) {
    qp.req.force_ackreq = false;  // the ACK probe: a duplicate by design, not a retransmission
  } else if (diff(s.psn, qp.req.max_psn) < 0) {
    inc(Counter::roce_adp_retrans);
    qp.traffic.retransmits++;
  }
  if (qp.selective) {
    sr_note_sent(qp, s.psn, after);
    if (w.opcode == WrOpcode::kRdmaRead) sr_note_read(qp, after - 1);
  }
  if (diff(after, qp.req.max_psn) > 0) qp.req.max_psn = after;
  qp.req.next_psn = after;
  qp.cc->on_packet_sent(static_cast<uint32_t>(r), now);
  qp.req.pkts_since_ackreq = s.ackreq ? 0 : qp.req.pkts_since_ackreq + 1;
  if (s.ackreq) qp.req.last_ackreq = now;
  qp.req.burst_pkts = now - qp.req.last_sent >= kAckReqStreamGap ? 1 : qp.req.burst_pkts + 1;
  qp.req.last_sent = now;
  // READ and atomic requests draw responses that acknowledge everything before them.
  const bool unasked = is_reliable(qp.type) && !s.ackreq && !is_rd_atomic(w);
  qp.req.probe_at = unasked ? now + kAckProbeDelay : Timestamp::never();
  if (last_of_wqe) {
    qp.req.send_pos = pos + 1;
    qp.req.send_off = 0;
  } else if (w.opcode == WrOpcode::kRdmaRead) {
    qp.req.send_off = read_next;
  } else {
    qp.req.send_off += payload;
  }
  if (is_reliable(qp.type)) {
    if (qp.comp.retrans_at.is_never())
      qp.comp.retrans_at = now + local_ack_timeout(qp.attr.timeout);
    if (qp.selective) sr_arm_rto(qp, now);
  } else if (last_of_wqe) {
    // UC/UD: the WR is complete once its last packet is on the wire.
    qp.comp.una = qp.req.next_psn;
    retire_head(qp, WcStatus::kSuccess);
  }
  return 1;
}

WcStatus Engine::Impl::run_local_op(Qp& qp, const SendWqe& w) {
  if (w.opcode == WrOpcode::kLocalInv) {
    // Only type 2 windows bound through this QP are invalidated (no fast-registered MRs);
    // anything else fails as rxe fails it: LOC_QP_OP_ERR.
    return mrs.invalidate_mw(w.imm, qp.qpn) == MwResult::kOk ? WcStatus::kSuccess
                                                             : WcStatus::kLocQpOpErr;
  }
  const auto lkey = static_cast<uint32_t>(w.swap >> 32);
  const auto access = static_cast<uint32_t>(w.swap);
  const MwResult r =
      mrs.bind_mw(w.imm, w.rkey, qp.qpn, qp.init.pd, lkey, w.remote_addr, w.compare_add, access);
  return r == MwResult::kOk ? WcStatus::kSuccess : WcStatus::kMwBindErr;
}

void Engine::Impl::requester_timers(Qp& qp, Timestamp now) {
  if (qp.selective) sr_timers(qp, now);
  if (qp.req.probe_at <= now) {
    qp.req.probe_at = Timestamp::never();
    // ACK probe (kAckProbeDelay): the stream stopped with its last packets never asked to be
    // ACKed; resend the last one with AckReq. Not while another packet can go out.
    if (outstanding(qp) && qp.req.next_psn == qp.req.max_psn && !requester_has_packet(qp) &&
        qp.req.rnr_until.is_never() && (qp.state == QpState::kRts || qp.state == QpState::kSqd)) {
      inc(Counter::req_ack_probes);
      rewind(qp, qp.req.next_psn - 1);
      qp.req.force_ackreq = true;
    }
  }
  if (qp.req.rnr_until <= now) {
    qp.req.rnr_until = Timestamp::never();
    activate(qp);
  }
  if (qp.req.neigh_retry_at <= now) {
    qp.req.neigh_retry_at = Timestamp::never();
    activate(qp);
  }
}

}  // namespace uroce::transport
